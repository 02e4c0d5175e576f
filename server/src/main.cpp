// rgpud: the rgpu server. Executes remote clients' CUDA calls on a device.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "rgpu/common/log.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/server/server.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpud [--listen HOST:PORT] [--device cpu|cuda|auto] [--driver PATH]\n"
               "             [--auth-token TOKEN] [--log-level error|warn|info|debug|trace]\n"
               "             [--module-cache DIR] [--module-cache-mem BYTES] [--poll-us US]\n"
               "\n"
               "  --listen HOST:PORT  address to accept clients on (default 127.0.0.1:0: a free port)\n"
               "  --device KIND       cuda: the system libcuda.so.1; cpu: rgpu's CPU device;\n"
               "                      auto (default): cuda when a GPU answers, else cpu\n"
               "  --driver PATH       load this driver library instead (overrides --device)\n"
               "  --auth-token TOKEN  clients must present it (RGPU_AUTH_TOKEN); also read from\n"
               "                      RGPU_AUTH_TOKEN in rgpud's environment\n"
               "  --module-cache DIR  keep module images in DIR (created 0700) across restarts:\n"
               "                      a program run again sends no module bytes\n"
               "  --module-cache-mem BYTES  image bytes kept in memory (default 1 GiB)\n"
               "  --poll-us US        how long the transport thread keeps polling after a message\n"
               "                      before it sleeps (default 30): longer saves wakeups, costs CPU\n"
               "\n"
               "rgpud prints \"rgpud listening on HOST:PORT\" on stdout once it accepts clients.\n");
}

// A CUDA driver that loads and reports at least one device.
bool cuda_usable() {
  auto table = rgpu::server::DriverTable::load("libcuda.so.1");
  if (!table.is_ok()) return false;
  int count = 0;
  return table.value()->cuInit(0) == CUDA_SUCCESS && table.value()->cuDeviceGetCount(&count) == CUDA_SUCCESS &&
         count > 0;
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::log::set_component("rgpud");
  rgpu::server::ServerOptions options;
  rgpu::transport::UcxOptions ucx_options;
  std::string device = "auto";
  std::string driver_path;
  if (const char* t = std::getenv("RGPU_AUTH_TOKEN")) options.auth_token = t;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rgpud: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--listen") {
      options.listen = value("--listen");
    } else if (arg == "--device") {
      device = value("--device");
    } else if (arg == "--driver") {
      driver_path = value("--driver");
    } else if (arg == "--auth-token") {
      options.auth_token = value("--auth-token");
    } else if (arg == "--module-cache") {
      options.module_cache_dir = value("--module-cache");
    } else if (arg == "--poll-us") {
      const std::string v = value("--poll-us");
      char* end = nullptr;
      const long us = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || us < 0 || us > 1000000) {
        std::fprintf(stderr, "rgpud: --poll-us wants microseconds from 0 to 1000000, got '%s'\n", v.c_str());
        return 2;
      }
      ucx_options.idle_spin = std::chrono::microseconds(us);
    } else if (arg == "--module-cache-mem") {
      const std::string v = value("--module-cache-mem");
      char* end = nullptr;
      errno = 0;
      const unsigned long long bytes = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0) {
        std::fprintf(stderr, "rgpud: --module-cache-mem wants a number of bytes, got '%s'\n", v.c_str());
        return 2;
      }
      options.module_cache_memory = bytes;
    } else if (arg == "--log-level") {
      rgpu::log::Level level;
      std::string v = value("--log-level");
      if (!rgpu::log::parse_level(v, &level)) {
        std::fprintf(stderr, "rgpud: unknown log level '%s'\n", v.c_str());
        return 2;
      }
      rgpu::log::set_level(level);
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("rgpud %s (protocol %u)\n", RGPU_VERSION_STRING, 1u);
      return 0;
    } else {
      std::fprintf(stderr, "rgpud: unknown argument '%s'\n\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  std::string host;
  uint16_t port;
  if (!rgpu::transport::split_host_port(options.listen, &host, &port)) {
    std::fprintf(stderr, "rgpud: --listen wants HOST:PORT, got '%s'\n", options.listen.c_str());
    return 2;
  }
  if (driver_path.empty()) {
    if (device == "auto") device = cuda_usable() ? "cuda" : "cpu";
    if (device == "cuda") {
      driver_path = "libcuda.so.1";
    } else if (device == "cpu") {
      driver_path = rgpu::server::find_cpu_device_library();
      if (driver_path.empty()) {
        std::fprintf(stderr, "rgpud: the CPU device library librgpu-cpudev.so was not found next to rgpud\n");
        return 1;
      }
    } else {
      std::fprintf(stderr, "rgpud: --device must be cpu, cuda or auto, got '%s'\n", device.c_str());
      return 2;
    }
  }

  // Signals are taken synchronously below; block them before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto driver = rgpu::server::DriverTable::load(driver_path);
  if (!driver.is_ok()) {
    std::fprintf(stderr, "rgpud: %s\n", driver.status().message().c_str());
    return 1;
  }
  auto transport = rgpu::transport::make_ucx_transport(ucx_options);
  if (!transport.is_ok()) {
    std::fprintf(stderr, "rgpud: cannot start UCX: %s\n", transport.status().message().c_str());
    return 1;
  }
  auto server = rgpu::server::Server::start(driver.value(), std::move(transport.value()), options);
  if (!server.is_ok()) {
    std::fprintf(stderr, "rgpud: %s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("rgpud listening on %s driver=%s\n", server.value()->address().c_str(), driver_path.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  RGPU_INFO("stopping signal=%d sessions=%zu", sig, server.value()->session_count());
  server.value().reset();
  return 0;
}
