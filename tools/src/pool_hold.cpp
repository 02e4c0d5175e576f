// `rgpu pool hold` (leases held for a batch system's job, spoken to through
// a line protocol) and `rgpu pool slurm-licenses` (the pool's device count
// as a Slurm license). docs/slurm.md describes both; slurm/rgpu_spank.cpp is
// the other end of the protocol.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client_env.h"
#include "install_layout.h"
#include "pool_cli.h"
#include "rgpu/common/request_text.h"
#include "rgpu/pool/wire.h"

namespace rgpu::tools {
namespace {

volatile sig_atomic_t g_stop = 0;

void on_stop_signal(int) { g_stop = 1; }

// SIGTERM, SIGINT and SIGHUP end the wait; without SA_RESTART, so that a
// blocking poll returns at once.
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// A text on one protocol line: line breaks become spaces.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// A value on one protocol line: a backslash and a line break are written
// as \\ and \n (a lease token has several lines); the plugin reads them back.
std::string escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void say(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

bool whole_number(const char* text, unsigned long max, unsigned long* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v == 0 || v > max || text[0] == '-') return false;
  *out = v;
  return true;
}

const char* const kHoldUsage =
    "usage: rgpu pool hold [--leases K] [--gpus N] [--mem SIZE] [--share F] [--program NAME]\n"
    "                      [--pool HOST:PORT] [--kind K] [--min-cc X.Y] [--priority P] [--tenant T] [--timeout S]\n";

}  // namespace

int hold_command(int argc, char** argv) {
  PoolRun pool;
  std::string request;
  std::string program = "rgpu pool hold";
  unsigned long leases = 1;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string error;
    if (arg == "--leases" && i + 1 < argc) {
      if (!whole_number(argv[++i], 1024, &leases)) {
        std::fprintf(stderr, "rgpu pool hold: --leases wants a whole number from 1 to 1024\n");
        return 2;
      }
    } else if ((arg == "--gpus" || arg == "--mem" || arg == "--share") && i + 1 < argc) {
      const char* key = arg == "--gpus" ? "devices=" : arg == "--mem" ? "mem=" : "share=";
      request += (request.empty() ? "" : ",") + std::string(key) + argv[++i];
    } else if (arg == "--program" && i + 1 < argc) {
      program = argv[++i];
    } else if (pool.take(argc, argv, &i, &error)) {
      if (!error.empty()) {
        std::fprintf(stderr, "rgpu pool hold: %s\n", error.c_str());
        return 2;
      }
    } else {
      std::fputs(kHoldUsage, stderr);
      return 2;
    }
  }
  if (!pool.active()) {
    say("error no pool (--pool HOST:PORT or RGPU_POOL)");
    return 2;
  }
  if (!request.empty()) {
    if (auto parsed = parse_request(request); !parsed.is_ok()) {
      say("error " + one_line(parsed.status().message()));
      return 2;
    }
  }
  const std::filesystem::path library = find_client_library();
  if (library.empty()) {
    say("error the client library librgpu.so was not found next to rgpu");
    return 1;
  }
  catch_stop_signals();
  std::vector<pool::client::Held> held(leases);
  std::string last_why;
  for (unsigned long k = 0; k < leases; ++k) {
    std::string error;
    const int rc = pool.lease(
        request, program,
        [&](const pool::client::QueueNotice& notice) {
          std::string why = notice.why.empty() ? "position " + std::to_string(notice.ahead + 1) : notice.why;
          if (why != last_why) say("waiting " + one_line(why));
          last_why = why;
        },
        &held[k], &error);
    if (rc != 0) {
      say("error " + one_line(error));
      return rc;  // the leases held so far go back as their connections close
    }
    if (g_stop) return 1;
  }
  const ClientEnvironment env = client_environment(library);
  say("prepend LD_PRELOAD=" + escaped(env.preload));
  say("prepend LD_LIBRARY_PATH=" + escaped(env.library_path));
  for (const auto& [name, value] : pool.settings_for_children()) say("set " + name + "=" + escaped(value));
  if (!request.empty()) say("set RGPU_REQUEST=" + escaped(request));
  for (unsigned long k = 0; k < leases; ++k) {
    say("task " + std::to_string(k) + " RGPU_SERVER=" + escaped(pool::client::server_list(held[k].placement)));
    say("task " + std::to_string(k) + " RGPU_LEASE=" + escaped(held[k].token));
  }
  say("ready");

  // Held until standard input closes (the job's end, or its holder gone)
  // or a signal; a lease the pool ends meanwhile is reported once.
  std::vector<bool> reported(leases, false);
  while (!g_stop) {
    struct pollfd p {
      0, POLLIN, 0
    };
    const int n = poll(&p, 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n > 0) {
      char buf[256];
      const ssize_t got = read(0, buf, sizeof buf);
      if (got <= 0 && !(got < 0 && errno == EINTR)) break;
      continue;
    }
    for (unsigned long k = 0; k < leases; ++k) {
      if (reported[k]) continue;
      if (auto why = pool::client::ended(held[k])) {
        say("ended " + std::to_string(k) + " " + one_line(*why));
        reported[k] = true;
      }
    }
  }
  for (auto& h : held) pool::client::release(h);
  return 0;
}

namespace {

// The devices of `kind` the pool's servers have, from its status reply.
Result<uint32_t> pool_devices(const std::vector<std::string>& pool, pool::KindWanted kind) {
  auto reply = pool::client::query_status(pool, std::chrono::milliseconds(5000));
  if (!reply.is_ok()) return reply.status();
  uint32_t n = 0;
  try {
    for (auto server : reply.value().root().getStatus().getServers()) {
      for (auto d : server.getDevices()) {
        auto k = pool::wire::read_text(d.getKind(), "kind", 64);
        if (!k.is_ok()) return k.status();
        if (kind == pool::KindWanted::kAny || k.value() == pool::kind_wanted_name(kind)) n += 1;
      }
    }
  } catch (const std::exception& e) {
    return failed(std::string("malformed status reply: ") + e.what());
  }
  return n;
}

// Writes `text` to `file` when it differs from what is there: through a
// file beside it, renamed over, so slurmctld never reads half a line.
// Returns whether it changed.
Result<bool> write_if_changed(const std::string& file, const std::string& text) {
  std::ifstream in(file);
  std::stringstream old;
  if (in) old << in.rdbuf();
  if (in && old.str() == text) return false;
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return failed("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) return failed("cannot rename " + tmp + " to " + file);
  return true;
}

// Runs `scontrol reconfigure`; its exit status, or -1.
int reconfigure(const std::string& scontrol) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execlp(scontrol.c_str(), scontrol.c_str(), "reconfigure", static_cast<char*>(nullptr));
    std::perror(("rgpu pool slurm-licenses: " + scontrol).c_str());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* const kLicensesUsage =
    "usage: rgpu pool slurm-licenses --file FILE [--pool HOST:PORT] [--license NAME] [--kind nvidia|cpu|any]\n"
    "                                [--every SECONDS] [--scontrol PATH]\n";

}  // namespace

int slurm_licenses_command(int argc, char** argv) {
  std::string pool_text = std::getenv("RGPU_POOL") != nullptr ? std::getenv("RGPU_POOL") : "";
  std::string file, license = "rgpu", scontrol = "scontrol";
  pool::KindWanted kind = pool::KindWanted::kNvidia;
  unsigned long every = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fputs(kLicensesUsage, stderr);
      return 2;
    }
    const char* value = argv[++i];
    if (arg == "--pool") {
      pool_text = value;
    } else if (arg == "--file") {
      file = value;
    } else if (arg == "--license") {
      license = value;
    } else if (arg == "--scontrol") {
      scontrol = value;
    } else if (arg == "--kind") {
      auto k = pool::parse_kind_wanted(value);
      if (!k.is_ok()) {
        std::fprintf(stderr, "rgpu pool slurm-licenses: --kind: %s\n", k.status().message().c_str());
        return 2;
      }
      kind = k.value();
    } else if (arg == "--every") {
      if (!whole_number(value, 86400, &every)) {
        std::fprintf(stderr, "rgpu pool slurm-licenses: --every wants whole seconds from 1 to 86400\n");
        return 2;
      }
    } else {
      std::fputs(kLicensesUsage, stderr);
      return 2;
    }
  }
  bool name_ok = !license.empty() && license.size() <= 64;
  for (char c : license) name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (file.empty() || pool_text.empty() || !name_ok) {
    std::fprintf(stderr, "rgpu pool slurm-licenses: %s\n",
                 file.empty()        ? "--file is required"
                 : pool_text.empty() ? "no pool (--pool HOST:PORT or RGPU_POOL)"
                                     : "--license wants letters, digits, '_' or '-' (at most 64)");
    return 2;
  }
  auto addresses = pool::net::parse_addresses(pool_text);
  if (!addresses.is_ok()) {
    std::fprintf(stderr, "rgpu pool slurm-licenses: %s\n", addresses.status().message().c_str());
    return 2;
  }
  catch_stop_signals();
  bool unread = false;  // the file changed and slurmctld has not read it yet
  while (true) {
    std::string error;
    auto n = pool_devices(addresses.value(), kind);
    if (!n.is_ok()) {
      error = n.status().message();
    } else {
      auto changed = write_if_changed(file, "Licenses=" + license + ":" + std::to_string(n.value()) + "\n");
      if (!changed.is_ok()) {
        error = changed.status().message();
      } else if (changed.value() || unread) {
        const int rc = reconfigure(scontrol);
        unread = rc != 0;
        if (rc != 0) {
          error = scontrol + " reconfigure failed (exit " + std::to_string(rc) + ")";
        } else {
          std::printf("rgpu pool slurm-licenses: %s:%u\n", license.c_str(), n.value());
          std::fflush(stdout);
        }
      }
    }
    if (!error.empty()) std::fprintf(stderr, "rgpu pool slurm-licenses: %s\n", error.c_str());
    if (every == 0) return error.empty() ? 0 : 1;
    for (unsigned long s = 0; s < every * 10 && !g_stop; ++s) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_stop) return 0;
  }
}

}  // namespace rgpu::tools
