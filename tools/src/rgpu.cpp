// rgpu: the command-line front end. `rgpu run -- CMD` runs CMD with rgpu's
// client library preloaded, against a given rgpud or an embedded local one.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "client_env.h"
#include "doctor.h"
#include "install_layout.h"
#include "pool_report_cli.h"
#include "pool_cli.h"
#include "rgpu/protocol/auth.h"
#include "rgpu/common/request_text.h"
#include "static_cudart.h"
#include "session_cli.h"
#include "top.h"

namespace fs = std::filesystem;

using rgpu::tools::find_client_library;
using rgpu::tools::rgpu_sonames;
using rgpu::tools::self_dir;

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu run [--server HOST:PORT[,HOST:PORT...]] [--device cpu|cuda|auto] [--module-cache DIR]\n"
               "                [--cpu-devices N] [--server-log FILE] [--gpus N] [--mem SIZE] [--share F]\n"
               "                -- COMMAND [ARGS...]\n"
               "       rgpu pool report (--history FILE | --pool HOST:PORT) [--since 24h] [--json OUT] [--html OUT]\n"
               "       rgpu run --pool HOST:PORT [--gpus N] [--mem SIZE] [--share F] [--kind nvidia|cpu|any]\n"
               "                [--min-cc X.Y] [--priority low|normal|high|N] [--tenant NAME] [--timeout S] -- COMMAND\n"
               "       rgpu pool status [--pool HOST:PORT]\n"
               "       rgpu pool hold [--leases K] [--gpus N] [--mem SIZE] [--share F] [pool options as run's]\n"
               "       rgpu pool slurm-licenses --file FILE [--pool HOST:PORT] [--license NAME] [--kind K] [--every S]\n"
               "       rgpu top [--metrics URL[,URL...]] [--interval S]\n"
               "       rgpu doctor [--server HOST:PORT] [--pool HOST:PORT] [--device cpu|cuda|auto]\n"
               "       rgpu session list|end [SESSION] [--server HOST:PORT]\n"
               "       rgpu --version\n"
               "\n"
               "run      runs COMMAND with rgpu's client library preloaded, so its CUDA calls go to\n"
               "         rgpud. With --server (or RGPU_SERVER set) it uses that server, or those\n"
               "         servers (a list, or --server given again: the program sees each one's\n"
               "         devices in turn); otherwise it\n"
               "         starts an embedded rgpud on a free loopback port for the duration of\n"
               "         COMMAND (--device picks its device; auto: a GPU if there is one, else\n"
               "         rgpu's CPU device; --module-cache keeps its module images in DIR, so\n"
               "         that a second run sends none; --cpu-devices gives its CPU device N\n"
               "         devices; --server-log appends its log to FILE instead of this\n"
               "         terminal). The embedded rgpud accepts only\n"
               "         COMMAND: it gets a fresh random key that rgpu hands to COMMAND alone.\n"
               "         --gpus N, --mem SIZE (per device) and --share F (0 to 1, the compute\n"
               "         share of each device) ask the server for that many slices that fit\n"
               "         (RGPU_REQUEST=\"devices=N,mem=SIZE,share=F\", which they replace;\n"
               "         docs/sharing.md).\n"
               "         With --pool (or RGPU_POOL set, and no server given) it asks rgpu-pool\n"
               "         for the devices, waits in its queue (at most --timeout seconds), and\n"
               "         runs COMMAND on the servers the pool chose, with the pool's lease\n"
               "         (docs/pool.md); the lease is released when COMMAND ends.\n"
               "         Errors whose reason the server knows are printed once each on\n"
               "         stderr (RGPU_ERRORS=quiet silences them); when COMMAND fails, rgpu\n"
               "         says where the server's log is.\n"
               "\n"
               "pool     status: the pool's servers, devices, leases and queue, each waiting\n"
               "         request with why. hold: K leases held for a batch system's job until\n"
               "         stdin closes, spoken of on stdout line by line (the Slurm plugin's\n"
               "         helper). slurm-licenses: keeps FILE at Licenses=NAME:N, N the pool's\n"
               "         devices of kind K, and runs `scontrol reconfigure` when it changes\n"
               "         (docs/slurm.md).\n"
               "\n"
               "top      a live view of rgpud /metrics endpoints: devices, slices, sessions and\n"
               "         their rates (rgpu top --help; docs/metrics.md).\n"
               "\n"
               "session  an operator's view of a server: `rgpu session list` prints one line per\n"
               "         session (id, tenant, devices, memory held, age, program), `rgpu session\n"
               "         end SESSION` ends one. Both prove the\n"
               "         server's admin key (rgpud --admin-key-file) from the file\n"
               "         RGPU_ADMIN_KEY_FILE names (docs/operations.md).\n"
               "\n"
               "doctor   checks what a program run through rgpu would meet here: the libraries it\n"
               "         loads, UCX's transports (RDMA or not), the pool, the server (answers,\n"
               "         authenticates, protocol), the session's devices and the round trip; each\n"
               "         problem with its fix. Exits 1 when something would fail.\n"
               "\n"
               "environment: RGPU_SERVER, RGPU_POOL, RGPU_POOL_TIMEOUT, RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE, RGPU_TENANT,\n"
               "             RGPU_LOG_LEVEL, RGPU_ERRORS, RGPU_SERVER_LOG (where a given server's log is, for the\n"
               "             message when COMMAND fails), RGPU_MODULE_CACHE, RGPU_STATS, UCX_TLS (transport choice)\n");
}

pid_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// A running embedded rgpud, stopped on destruction.
struct EmbeddedServer {
  pid_t pid = 0;
  std::string address;
  ~EmbeddedServer() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; ++i) {  // up to 5 s for a clean stop
      if (waitpid(pid, nullptr, WNOHANG) == pid) return;
      usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

// A fresh random key for the embedded rgpud and its one client, as hex.
bool random_key(std::string* out) {
  auto nonce = rgpu::protocol::auth::random_nonce();
  if (!nonce.is_ok()) return false;
  static const char kHex[] = "0123456789abcdef";
  out->clear();
  for (uint8_t b : nonce.value()) {
    out->push_back(kHex[b >> 4]);
    out->push_back(kHex[b & 15]);
  }
  return true;
}

bool start_embedded_server(const std::string& device, const std::string& module_cache,
                           const std::string& cpu_devices, const std::string& log, const std::string& key,
                           EmbeddedServer* server) {
  fs::path rgpud = self_dir() / "rgpud";
  if (!fs::exists(rgpud)) {
    std::fprintf(stderr, "rgpu: rgpud not found next to rgpu (%s)\n", rgpud.c_str());
    return false;
  }
  int log_fd = -1;
  if (!log.empty()) {
    log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) {
      std::fprintf(stderr, "rgpu run: --server-log %s: %s\n", log.c_str(), std::strerror(errno));
      return false;
    }
  }
  int out[2];
  if (pipe(out) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (log_fd >= 0) dup2(log_fd, 2);
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    unsetenv("LD_PRELOAD");
    unsetenv("RGPU_AUTH_TOKEN_FILE");
    setenv("RGPU_AUTH_TOKEN", key.c_str(), 1);  // the environment, never argv (ps shows argv)
    std::vector<const char*> args = {"rgpud", "--listen", "127.0.0.1:0", "--device", device.c_str()};
    if (!module_cache.empty()) args.insert(args.end(), {"--module-cache", module_cache.c_str()});
    if (!cpu_devices.empty()) args.insert(args.end(), {"--cpu-devices", cpu_devices.c_str()});
    args.push_back(nullptr);
    execv(rgpud.c_str(), const_cast<char* const*>(args.data()));
    std::fprintf(stderr, "rgpu: cannot start %s: %s\n", rgpud.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  if (log_fd >= 0) close(log_fd);
  server->pid = pid;
  // Wait for "rgpud listening on HOST:PORT ..." (bounded).
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        server->pid = 0;
        break;
      }
      continue;
    }
    char buf[256];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, n);
    size_t at = text.find("rgpud listening on ");
    size_t eol = text.find('\n', at == std::string::npos ? 0 : at);
    if (at != std::string::npos && eol != std::string::npos) {
      std::string line = text.substr(at + 19, eol - at - 19);
      server->address = line.substr(0, line.find(' '));
      close(out[0]);
      return true;
    }
  }
  close(out[0]);
  std::fprintf(stderr, "rgpu: the embedded rgpud did not start%s%s\n", log.empty() ? "" : "; its log: ",
               log.c_str());
  return false;
}

// Where the server's log is, said once COMMAND has failed with `status`:
// the reasons the client printed are the server's summary of it.
void say_where_the_log_is(const char* command, int status, bool embedded, const std::string& log,
                          const std::string& servers) {
  std::string where;
  const char* told = std::getenv("RGPU_SERVER_LOG");  // set by whoever started that rgpud
  if (!embedded && told != nullptr && *told != '\0') {
    where = std::string("rgpud's log is in ") + told;
  } else if (!embedded) {
    where = "the server's log is on its host (" + servers + ")";
  } else if (!log.empty()) {
    where = "the embedded rgpud's log is in " + log;
  } else {
    where = "the embedded rgpud logged to this terminal (--server-log FILE keeps its log apart)";
  }
  std::fprintf(stderr, "rgpu: %s %s %d; %s\n", command, WIFSIGNALED(status) ? "ended by signal" : "exited with status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), where.c_str());
}

int run(int argc, char** argv) {
  std::string server_address;
  std::string device = "auto";
  std::string module_cache;
  std::string cpu_devices;  // passed on to the embedded rgpud, which checks it
  std::string server_log;   // the embedded rgpud's stderr (empty: this terminal)
  std::string request;      // --gpus, --mem, --share as RGPU_REQUEST items
  rgpu::tools::PoolRun pool;
  std::string pool_error;
  if (const char* dir = std::getenv("RGPU_MODULE_CACHE")) module_cache = dir;
  int i = 0;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--server" && i + 1 < argc) {
      // Given again, it adds servers to the list (RGPU_SERVER's comma-separated form).
      server_address += (server_address.empty() ? "" : ",") + std::string(argv[++i]);
    } else if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (arg == "--module-cache" && i + 1 < argc) {
      module_cache = argv[++i];
    } else if (arg == "--cpu-devices" && i + 1 < argc) {
      cpu_devices = argv[++i];
    } else if (arg == "--server-log" && i + 1 < argc) {
      server_log = argv[++i];
    } else if ((arg == "--gpus" || arg == "--mem" || arg == "--share") && i + 1 < argc) {
      const char* key = arg == "--gpus" ? "devices=" : arg == "--mem" ? "mem=" : "share=";
      request += (request.empty() ? "" : ",") + std::string(key) + argv[++i];
    } else if (pool.take(argc, argv, &i, &pool_error)) {
      if (!pool_error.empty()) {
        std::fprintf(stderr, "rgpu run: %s\n", pool_error.c_str());
        return 2;
      }
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg[0] != '-') {
      break;  // the command, without "--"
    } else {
      std::fprintf(stderr, "rgpu run: unknown option '%s'\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "rgpu run: no command given\n");
    usage(stderr);
    return 2;
  }
  if (!request.empty()) {
    auto parsed = rgpu::parse_request(request);  // the client reads it the same way
    if (!parsed.is_ok()) {
      std::fprintf(stderr, "rgpu run: %s\n", parsed.status().message().c_str());
      return 2;
    }
  }
  if (device != "auto" && device != "cpu" && device != "cuda") {
    std::fprintf(stderr, "rgpu run: --device must be cpu, cuda or auto\n");
    return 2;
  }
  if (int rc = rgpu::tools::refuse_static_cudart(argv[i]); rc != 0) return rc;
  fs::path library = find_client_library();
  if (library.empty()) {
    std::fprintf(stderr, "rgpu: the client library librgpu.so was not found next to rgpu\n");
    return 1;
  }
  if (server_address.empty()) {
    if (const char* env = std::getenv("RGPU_SERVER"); env && *env) server_address = env;
  }
  if (server_address.empty() && pool.active()) {
    if (int rc = pool.acquire(request, argv[i]); rc != 0) return rc;
    server_address = pool.servers();
  }
  EmbeddedServer embedded;
  std::string embedded_key;
  if (server_address.empty()) {
    if (!random_key(&embedded_key)) {
      std::fprintf(stderr, "rgpu: no random bytes for the embedded rgpud's key\n");
      return 1;
    }
    if (!start_embedded_server(device, module_cache, cpu_devices, server_log, embedded_key, &embedded)) return 1;
    server_address = embedded.address;
  }

  const rgpu::tools::ClientEnvironment client = rgpu::tools::client_environment(library);
  const std::string preload = rgpu::tools::path_before(client.preload, std::getenv("LD_PRELOAD"));
  const std::string libpath = rgpu::tools::path_before(client.library_path, std::getenv("LD_LIBRARY_PATH"));

  pid_t pid = fork();
  if (pid < 0) {
    std::perror("rgpu: fork");
    return 1;
  }
  if (pid == 0) {
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("LD_LIBRARY_PATH", libpath.c_str(), 1);
    setenv("RGPU_SERVER", server_address.c_str(), 1);
    if (!request.empty()) setenv("RGPU_REQUEST", request.c_str(), 1);
    pool.export_for_child();  // COMMAND's own lease; its children ask the pool for theirs
    if (!embedded_key.empty()) {
      unsetenv("RGPU_AUTH_TOKEN_FILE");
      unsetenv("RGPU_TENANT");
      setenv("RGPU_AUTH_TOKEN", embedded_key.c_str(), 1);
    }
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "rgpu: cannot run '%s': %s\n", argv[i], std::strerror(errno));
    _exit(127);
  }
  g_child = pid;
  signal(SIGINT, forward_signal);
  signal(SIGTERM, forward_signal);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) {
    say_where_the_log_is(argv[i], status, !embedded_key.empty(), server_log, server_address);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "run") return run(argc - 2, argv + 2);
  if (cmd == "pool" && argc > 2 && std::string(argv[2]) == "report") {
    return rgpu::tools::pool_report_main(argc - 3, argv + 3);
  }
  if (cmd == "pool") return rgpu::tools::pool_command(argc - 2, argv + 2);
  if (cmd == "top") return rgpu::tools::run_top(argc - 2, argv + 2);  // live view of /metrics (top.cpp)
  if (cmd == "doctor") return rgpu::tools::doctor_main(argc - 2, argv + 2);
  if (cmd == "session") return rgpu::tools::session_command(argc - 2, argv + 2);
  if (cmd == "--version" || cmd == "version") {
    std::printf("rgpu %s\n", RGPU_VERSION_STRING);
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "rgpu: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}
