// rgpu doctor. The session checks run rgpu-doctor-probe (doctor_probe.cpp)
// as `rgpu run` would start a program (the same preload, library path,
// server, pool lease or embedded rgpud); it asks through the CUDA driver API
// what a program would get, so the doctor cannot disagree with a real run.
#include "doctor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "install_layout.h"
#include "text.h"
#include "rgpu/pool/client.h"
#include "rgpu/pool/model.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/wire.h"

namespace fs = std::filesystem;

namespace rgpu::tools {
namespace {

// Sync calls the probe times for the round trip (doctor_probe.cpp).
constexpr int kRoundTrips = 200;
// How long the probe (connect, lease, device queries) may take.
constexpr auto kProbeTimeout = std::chrono::seconds(90);

struct Problem {
  std::string what;
  std::string fix;
};

// ---- running a child and reading it -----------------------------------------

struct ChildOutput {
  bool started = false;
  bool timed_out = false;
  int status = 0;
  std::string out;
  std::string err;
};

// Runs `args` with `env` added, collecting stdout and stderr, for at most
// `limit` (then SIGTERM, SIGKILL 5 s later, and 5 s after that it stops
// reading whatever still holds the pipes).
ChildOutput run_child(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                      std::chrono::seconds limit) {
  ChildOutput r;
  int out[2];
  int err[2];
  if (pipe(out) != 0) return r;
  if (pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return r;
  }
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(args[0].c_str(), argv.data());
    _exit(127);
  }
  r.started = true;
  close(out[1]);
  close(err[1]);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool term_sent = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      if (!term_sent) {
        kill(pid, SIGTERM);
        term_sent = true;
        r.timed_out = true;
      } else if (now > deadline + std::chrono::seconds(10)) {
        break;  // a process it started may hold the pipes open: stop reading
      } else if (now > deadline + std::chrono::seconds(5)) {
        kill(pid, SIGKILL);
      }
    }
    if (poll(fds, 2, 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  waitpid(pid, &r.status, 0);
  return r;
}

std::vector<std::vector<std::string>> fields(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    size_t start = 0;
    while (true) {
      const size_t tab = line.find('\t', start);
      row.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The value of `key=` in a log line (quoted or up to the next space).
std::string log_value(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 2;
  if (start < line.size() && line[start] == '"') {
    const size_t end = line.find('"', start + 1);
    return line.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
  }
  return line.substr(start, line.find(' ', start) - start);
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

// The last lines of the child's stderr that rgpu wrote (its reasons).
std::string last_reason(const std::string& err) {
  std::istringstream in(err);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (line.find("rgpu") != std::string::npos && line.find("connected server=") == std::string::npos &&
        line.find("visible devices=") == std::string::npos) {
      last = line;
    }
  }
  return printable(last);
}

// ---- the checks -------------------------------------------------------------

void line(const char* what, const std::string& text) { std::printf("  %-16s %s\n", what, text.c_str()); }

// UCX's version and transports, and whether any is RDMA.
void check_ucx(std::vector<Problem>* problems) {
  std::printf("transport\n");
  line("ucx", ucp_get_version_string());
  uct_component_h* components = nullptr;
  unsigned ncomponents = 0;
  if (uct_query_components(&components, &ncomponents) != UCS_OK) {
    problems->push_back({"UCX lists no components", "reinstall UCX (apt-get install libucx0)"});
    return;
  }
  std::map<std::string, std::set<std::string>> tls;  // transport -> devices
  for (unsigned c = 0; c < ncomponents; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (const auto& md_res : mds) {
      uct_md_config_t* config = nullptr;
      if (uct_md_config_read(components[c], nullptr, nullptr, &config) != UCS_OK) continue;
      uct_md_h md = nullptr;
      const ucs_status_t st = uct_md_open(components[c], md_res.md_name, config, &md);
      uct_config_release(config);
      if (st != UCS_OK) continue;
      uct_tl_resource_desc_t* res = nullptr;
      unsigned nres = 0;
      if (uct_md_query_tl_resources(md, &res, &nres) == UCS_OK) {
        for (unsigned i = 0; i < nres; ++i) tls[res[i].tl_name].insert(res[i].dev_name);
        uct_release_tl_resource_list(res);
      }
      uct_md_close(md);
    }
  }
  uct_release_component_list(components);
  std::string list;
  std::vector<std::string> rdma;
  for (const auto& [tl, devs] : tls) {
    std::string devices;
    for (const auto& d : devs) devices += (devices.empty() ? "" : ",") + d;
    list += (list.empty() ? "" : ", ") + tl + " (" + devices + ")";
    if (tl.find("rc") == 0 || tl.find("ud") == 0 || tl.find("dc") == 0) rdma.push_back(tl + " on " + devices);
  }
  line("transports", list.empty() ? "none" : list);
  if (rdma.empty()) {
    line("RDMA", "none here (no InfiniBand or RoCE device): rgpu runs over tcp and shared memory");
  } else {
    std::string r;
    for (const auto& x : rdma) r += (r.empty() ? "" : "; ") + x;
    line("RDMA", r);
  }
  if (const char* t = std::getenv("UCX_TLS"); t && *t) line("UCX_TLS", t);
  if (tls.find("tcp") == tls.end() && rdma.empty()) {
    problems->push_back({"UCX has neither tcp nor an RDMA transport: no server can be reached",
                         "check the network devices UCX sees (ucx_info -d) and UCX_NET_DEVICES"});
  }
}

// The pool's answer and whether it has devices of the kind asked for.
void check_pool(const std::string& pool, std::vector<Problem>* problems) {
  std::printf("pool %s\n", pool.c_str());
  auto addresses = pool::net::parse_addresses(pool);
  if (!addresses.is_ok()) {
    problems->push_back({"the pool address is malformed: " + addresses.status().message(),
                         "give HOST:PORT[,HOST:PORT] (--pool or RGPU_POOL)"});
    return;
  }
  auto reply = pool::client::query_status(addresses.value(), std::chrono::milliseconds(5000));
  if (!reply.is_ok()) {
    line("answers", "no: " + printable(reply.status().message()));
    problems->push_back({"the pool does not answer: " + printable(reply.status().message()),
                         "check the address and that rgpu-pool runs there (systemctl status rgpu-pool)"});
    return;
  }
  pool::Request request;
  if (Status s = pool::client::request_from_environment(&request); !s.is_ok()) {
    problems->push_back({s.message(), "fix that variable (docs/pool.md, \"Clients\")"});
  }
  try {
    auto s = reply.value().root().getStatus();
    std::map<std::string, uint32_t> kinds;
    uint32_t devices = 0;
    uint32_t wanted = 0;
    for (auto srv : s.getServers()) {
      for (auto d : srv.getDevices()) {
        auto kind = pool::wire::read_text(d.getKind(), "kind");
        const std::string k = kind.is_ok() ? kind.value() : "?";
        kinds[k] += 1;
        devices += 1;
        const bool cpu = k == "cpu";
        if (request.kind == pool::KindWanted::kAny || (cpu == (request.kind == pool::KindWanted::kCpu))) wanted += 1;
      }
    }
    std::string by_kind;
    for (const auto& [k, n] : kinds) by_kind += (by_kind.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    line("answers", "yes: " + std::to_string(s.getServers().size()) + " servers, " + std::to_string(devices) +
                        " devices" + (by_kind.empty() ? "" : " (" + printable(by_kind) + ")") + ", " +
                        std::to_string(s.getLeases().size()) + " leases, " + std::to_string(s.getQueue().size()) +
                        " waiting");
    if (s.getServers().size() == 0) {
      problems->push_back({"no server has registered with the pool", "start rgpud with --pool (docs/pool.md)"});
    } else if (wanted < request.devices) {
      problems->push_back({"the pool has " + std::to_string(wanted) + " devices of kind " +
                               pool::kind_wanted_name(request.kind) + " and " + std::to_string(request.devices) +
                               " are asked: the request would be refused",
                           request.kind == pool::KindWanted::kNvidia && kinds.count("cpu")
                               ? "ask for the CPU device: --kind cpu or RGPU_POOL_KIND=cpu"
                               : "ask for fewer devices or another kind (--gpus, --kind)"});
    }
  } catch (const std::exception& e) {
    problems->push_back({std::string("the pool's status reply is malformed: ") + e.what(),
                         "run the same version of rgpu-pool and rgpu"});
  }
}

// The session through `rgpu run`: libraries, connection, devices, round trip.
void check_session(const fs::path& self, const fs::path& library, const std::vector<std::string>& run_args,
                   const std::string& where, std::vector<Problem>* problems) {
  std::printf("session (%s)\n", where.c_str());
  std::vector<std::string> args = {self.string(), "run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  args.insert(args.end(), {"--", (self.parent_path() / "rgpu-doctor-probe").string(), "--device"});
  const ChildOutput r = run_child(args, {{"RGPU_LOG_LEVEL", "info"}}, kProbeTimeout);
  if (!r.started) {
    problems->push_back({"cannot start rgpu run", "check the installation (rgpu and rgpud in one folder)"});
    return;
  }
  std::string rgpu_lib_real;
  {
    std::error_code ec;
    rgpu_lib_real = fs::weakly_canonical(library, ec).string();
  }
  std::vector<std::string> foreign;
  int libs = 0;
  std::string init;
  std::vector<std::string> devices;
  std::string rtt;
  for (const auto& row : fields(r.out)) {
    if (row[0] == "lib" && row.size() == 3) {
      ++libs;
      if (row[2] != rgpu_lib_real) foreign.push_back(row[1] + " -> " + (row[2] == "-" ? "not found" : row[2]));
    } else if (row[0] == "init" && row.size() == 2) {
      init = row[1];
    } else if (row[0] == "device" && row.size() == 6) {
      devices.push_back(row[1] + ": " + printable(row[2]) + ", " + gib(std::strtoull(row[3].c_str(), nullptr, 10)) +
                        ", compute capability " + row[4] + "." + row[5]);
    } else if (row[0] == "rtt_us" && row.size() == 3) {
      rtt = "p50 " + row[1] + " us, p99 " + row[2] + " us over " + std::to_string(kRoundTrips) +
            " 4-byte device-to-host copies";
    }
  }
  line("libraries", std::to_string(libs - static_cast<int>(foreign.size())) + " of " + std::to_string(libs) +
                        " names resolve to rgpu's " + library.string());
  const std::string front_dir = (fs::path(rgpu_lib_real).parent_path() / "rgpu-nvrtc").string() + "/";
  for (const std::string& f : foreign) {
    const bool rgpu_name = f.rfind("libnvrtc", 0) != 0;
    if (f.find(front_dir) != std::string::npos) {
      line("", f + " (rgpu's NVRTC front: compiled code loads on any device)");
      continue;
    }
    line("", f);
    if (rgpu_name) {
      problems->push_back({"under rgpu run, " + f + " instead of rgpu's library: its calls would not be remoted",
                           "reinstall the client libraries (the links in " + (library.parent_path() / "rgpu").string() +
                               ")"});
    }
  }
  std::string connected;
  {
    std::istringstream in(r.err);
    std::string l;
    while (std::getline(in, l)) {
      if (l.find("connected server=") != std::string::npos) connected = l;
    }
  }
  if (!connected.empty()) {
    line("server", printable(log_value(connected, "server")) + " answers; build " +
                       printable(log_value(connected, "server_build")));
    line("authenticated", "as tenant " + printable(log_value(connected, "tenant")));
    line("protocol", printable(log_value(connected, "protocol")) + " (the server speaks " +
                         printable(log_value(connected, "server_protocols")) + ")");
    line("integrity", log_value(connected, "sealed") == "yes"
                          ? "sealed: every message carries integrity tags"
                          : "not sealed (a local session, or rgpud --integrity off; RGPU_INTEGRITY=on insists)");
  }
  if (r.timed_out) {
    problems->push_back({"the session did not come up within " + std::to_string(kProbeTimeout.count()) + " s",
                         "check that the server runs and is reachable; RGPU_LOG_LEVEL=debug rgpu run ... shows where it waits"});
    return;
  }
  if (init != "ok") {
    const std::string reason = last_reason(r.err);
    line("cuInit", (init.empty() ? std::string("not reached") : init) + (reason.empty() ? "" : ": " + reason));
    std::string fix = "see the server's log; RGPU_LOG_LEVEL=debug shows the client's side";
    if (reason.find("auth") != std::string::npos || reason.find("key") != std::string::npos ||
        reason.find("proof") != std::string::npos) {
      fix = "set RGPU_AUTH_TOKEN_FILE to your tenant's key file (and RGPU_TENANT), as the server's --auth-file has it";
    } else if (reason.find("connect") != std::string::npos || reason.find("refused") != std::string::npos ||
               reason.find("unreachable") != std::string::npos) {
      fix = "check the address, that rgpud listens there, and that a UCX transport reaches it (UCX_TLS)";
    }
    problems->push_back({"a program's cuInit would fail" + (reason.empty() ? std::string() : ": " + reason), fix});
    return;
  }
  line("devices", std::to_string(devices.size()));
  for (const std::string& d : devices) line("", d);
  if (devices.empty()) {
    problems->push_back({"the session has no device", "ask for fewer or smaller slices (--gpus, --mem)"});
  }
  if (!rtt.empty()) line("round trip", rtt);
}

// What a program started without rgpu would load.
void check_plain(const fs::path& self, const std::string& rgpu_lib_real) {
  const ChildOutput r =
      run_child({(self.parent_path() / "rgpu-doctor-probe").string()}, {}, std::chrono::seconds(30));
  std::string cuda;
  for (const auto& row : fields(r.out)) {
    if (row.size() == 3 && row[0] == "lib" && row[1] == "libcuda.so.1") cuda = row[2];
  }
  if (cuda.empty()) return;
  if (cuda == "-") {
    line("without rgpu", "libcuda.so.1 is not found: CUDA programs must start through rgpu run (or with librgpu.so preloaded)");
  } else if (cuda == rgpu_lib_real) {
    line("without rgpu", "libcuda.so.1 is rgpu's (installed as the system's)");
  } else {
    line("without rgpu", "libcuda.so.1 is " + cuda + ": programs started without rgpu run use it");
  }
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu doctor [--server HOST:PORT] [--pool HOST:PORT] [--device cpu|cuda|auto]\n"
               "checks what a program run through rgpu would meet: the libraries it loads, UCX's\n"
               "transports, the pool, the server (answers, authenticates, protocol), the devices and\n"
               "slices of a session and the round trip. Without a server or pool (RGPU_SERVER,\n"
               "RGPU_POOL) it checks rgpu run's embedded local rgpud. Exits 1 when something would fail.\n");
}

}  // namespace

int doctor_main(int argc, char** argv) {
  std::string server;
  std::string pool;
  std::string device;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--server" && i + 1 < argc) {
      server = argv[++i];
    } else if (arg == "--pool" && i + 1 < argc) {
      pool = argv[++i];
    } else if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "rgpu doctor: unknown option '%s'\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (server.empty()) {
    if (const char* s = std::getenv("RGPU_SERVER"); s && *s) server = s;
  }
  if (pool.empty() && server.empty()) {
    if (const char* p = std::getenv("RGPU_POOL"); p && *p) pool = p;
  }
  std::vector<Problem> problems;
  std::printf("rgpu doctor (rgpu %s)\n", RGPU_VERSION_STRING);
  const fs::path self = self_dir() / "rgpu";
  const fs::path library = find_client_library();
  std::printf("client\n");
  if (library.empty()) {
    line("library", "librgpu.so not found next to rgpu");
    problems.push_back({"the client library librgpu.so is not installed next to rgpu",
                        "install rgpu-client-libs (or build the rgpu target)"});
  } else {
    line("library", library.string());
    std::error_code ec;
    check_plain(self, fs::weakly_canonical(library, ec).string());
  }
  check_ucx(&problems);
  if (!pool.empty()) check_pool(pool, &problems);
  if (!library.empty()) {
    std::vector<std::string> run_args;
    std::string where;
    if (!server.empty()) {
      run_args = {"--server", server};
      where = "server " + server;
    } else if (!pool.empty()) {
      run_args = {"--pool", pool};
      where = "a lease from the pool";
    } else {
      if (!device.empty()) run_args = {"--device", device};
      where = "rgpu run's embedded rgpud; --server or --pool checks another";
    }
    check_session(self, library, run_args, where, &problems);
  }
  if (problems.empty()) {
    std::printf("no problems found\n");
    return 0;
  }
  std::printf("%zu problem%s\n", problems.size(), problems.size() == 1 ? "" : "s");
  for (const Problem& p : problems) std::printf("  - %s\n    fix: %s\n", p.what.c_str(), p.fix.c_str());
  return 1;
}

}  // namespace rgpu::tools
