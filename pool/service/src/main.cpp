// rgpu-pool: the pool's scheduler as a network service (docs/pool.md).
#include <signal.h>

#include <cstdio>
#include <string>
#include <thread>

#include "rgpu/common/log.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/service.h"
#include "rgpu/protocol/auth.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu-pool --listen HOST:PORT --key-file FILE [--config pool.toml]\n"
               "                 [--log-level error|warn|info|debug|trace]\n"
               "\n"
               "  --listen HOST:PORT  where servers and clients reach the pool (port 0: a free one)\n"
               "  --key-file FILE     the lease-signing key, shared with every rgpud (--pool-key-file);\n"
               "                      the file must be private (chmod 600)\n"
               "  --config FILE       scheduler, heartbeat and tenant settings (docs/pool.md)\n"
               "\n"
               "rgpu-pool prints \"rgpu-pool listening on HOST:PORT\" on stdout once it serves.\n");
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::log::set_component("rgpu-pool");
  rgpu::pool::service::ServiceOptions options;
  options.listen.clear();
  std::string key_file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rgpu-pool: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--listen") {
      options.listen = value("--listen");
    } else if (arg == "--key-file") {
      key_file = value("--key-file");
    } else if (arg == "--config") {
      auto config = rgpu::pool::load_config(value("--config"));
      if (!config.is_ok()) {
        std::fprintf(stderr, "rgpu-pool: %s\n", config.status().message().c_str());
        return 2;
      }
      options.config = config.value();
    } else if (arg == "--log-level") {
      rgpu::log::Level level;
      const std::string v = value("--log-level");
      if (!rgpu::log::parse_level(v, &level)) {
        std::fprintf(stderr, "rgpu-pool: unknown log level '%s'\n", v.c_str());
        return 2;
      }
      rgpu::log::set_level(level);
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "rgpu-pool: unknown argument '%s'\n\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (options.listen.empty() || key_file.empty()) {
    usage(stderr);
    return 2;
  }
  auto text = rgpu::protocol::auth::read_secret_file(key_file);
  auto key = text.is_ok() ? rgpu::protocol::auth::clean_secret(text.value(), key_file)
                          : rgpu::Result<std::string>(text.status());
  if (!key.is_ok()) {
    std::fprintf(stderr, "rgpu-pool: --key-file: %s\n", key.status().message().c_str());
    return 2;
  }
  options.key = key.value();
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto service = rgpu::pool::service::Service::open(std::move(options));
  if (!service.is_ok()) {
    std::fprintf(stderr, "rgpu-pool: %s\n", service.status().message().c_str());
    return 1;
  }
  std::printf("rgpu-pool listening on %s\n", service.value()->address().c_str());
  std::fflush(stdout);
  std::thread waiter([&stop_signals, &service] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    service.value()->stop();
  });
  const rgpu::Status s = service.value()->run();
  waiter.detach();
  if (!s.is_ok()) {
    std::fprintf(stderr, "rgpu-pool: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
