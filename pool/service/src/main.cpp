// rgpu-pool: the pool's scheduler as a network service (docs/pool.md).
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "rgpu/common/log.h"
#include "rgpu/common/metrics.h"
#include "rgpu/common/metrics_http.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/history.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/service.h"
#include "rgpu/protocol/auth.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu-pool --listen HOST:PORT --key-file FILE [--auth-file FILE] [--insecure]\n"
               "                 [--config pool.toml]\n"
               "                 [--etcd URL[,URL...] [--etcd-prefix P] [--instance NAME]]\n"
               "                 [--history FILE] [--metrics HOST:PORT] [--log-level error|warn|info|debug|trace]\n"
               "\n"
               "  --listen HOST:PORT  where servers and clients reach the pool (port 0: a free one)\n"
               "  --key-file FILE     the lease-signing key, shared with every rgpud (--pool-key-file);\n"
               "                      the file must be private (chmod 600)\n"
               "  --auth-file FILE    the tenants' keys, as rgpud's --auth-file (\"TENANT SECRET\" per\n"
               "                      line, chmod 600): every request for devices must prove its\n"
               "                      tenant's key. Required on a non-loopback --listen\n"
               "  --insecure          allow a non-loopback --listen without --auth-file: any peer that\n"
               "                      reaches the pool may then ask for devices for any tenant\n"
               "  --config FILE       scheduler, heartbeat, tenant and [history] settings (docs/pool.md)\n"
               "  --etcd URLS         share the pool's state in etcd with other rgpu-pool instances\n"
               "                      (comma-separated endpoints, tried in order)\n"
               "  --etcd-prefix P     the pool's keys in etcd (default /rgpu/pool/)\n"
               "  --instance NAME     this instance's name among the live ones (default: its address)\n"
               "  --history FILE      keep the usage history in FILE (overrides history.file)\n"
               "  --metrics HOST:PORT serve Prometheus metrics at http://HOST:PORT/metrics (port 0: a\n"
               "                      free one; docs/metrics.md). No authentication: bind it to\n"
               "                      loopback or a management network\n"
               "\n"
               "rgpu-pool prints \"rgpu-pool listening on HOST:PORT\" on stdout once it serves.\n");
}

bool listens_on_loopback(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  return rgpu::pool::net::split_address(address, &host, &port) && rgpu::protocol::auth::is_loopback_host(host);
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::log::set_component("rgpu-pool");
  rgpu::pool::service::ServiceOptions options;
  options.listen.clear();
  std::string key_file;
  std::string auth_file;
  bool insecure = false;
  std::string history_file;
  std::string metrics_address;
  rgpu::metrics::Registry registry;  // outlives the service, which records into it
  std::optional<rgpu::pool::HistoryOptions> history_config;
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
    } else if (arg == "--auth-file") {
      auth_file = value("--auth-file");
    } else if (arg == "--insecure") {
      insecure = true;
    } else if (arg == "--config") {
      const std::string path = value("--config");
      std::ifstream in(path, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      if (!in) {
        std::fprintf(stderr, "rgpu-pool: cannot read %s\n", path.c_str());
        return 2;
      }
      auto config = rgpu::pool::parse_config(text.str(), path);
      auto history = rgpu::pool::parse_history_config(text.str(), path);
      if (!config.is_ok() || !history.is_ok()) {
        std::fprintf(stderr, "rgpu-pool: %s\n",
                     (config.is_ok() ? history.status() : config.status()).message().c_str());
        return 2;
      }
      options.config = config.value();
      history_config = history.value();
    } else if (arg == "--etcd") {
      // "http://HOST:PORT" or "HOST:PORT", comma-separated.
      std::stringstream list(value("--etcd"));
      for (std::string item; std::getline(list, item, ',');) {
        if (item.empty()) {
          std::fprintf(stderr, "rgpu-pool: --etcd: an empty endpoint\n");
          return 2;
        }
        options.etcd.push_back(item);
      }
    } else if (arg == "--etcd-prefix") {
      options.etcd_prefix = value("--etcd-prefix");
    } else if (arg == "--instance") {
      options.instance = value("--instance");
    } else if (arg == "--history") {
      history_file = value("--history");
    } else if (arg == "--metrics") {
      metrics_address = value("--metrics");
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
    } else if (arg == "--version") {
      std::printf("rgpu-pool %s\n", RGPU_VERSION_STRING);
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
  auto key = rgpu::protocol::auth::read_key_file(key_file);
  if (!key.is_ok()) {
    std::fprintf(stderr, "rgpu-pool: --key-file: %s\n", key.status().message().c_str());
    return 2;
  }
  options.key = key.value();
  if (!auth_file.empty()) {
    auto keys_text = rgpu::protocol::auth::read_secret_file(auth_file);
    auto keys = keys_text.is_ok() ? rgpu::protocol::auth::KeyRing::parse(keys_text.value(), auth_file)
                                  : rgpu::Result<rgpu::protocol::auth::KeyRing>(keys_text.status());
    if (!keys.is_ok()) {
      std::fprintf(stderr, "rgpu-pool: --auth-file: %s\n", keys.status().message().c_str());
      return 2;
    }
    options.tenants = std::move(keys.value());
  } else if (!insecure && !listens_on_loopback(options.listen)) {
    std::fprintf(stderr,
                 "rgpu-pool: --listen %s is not a loopback address and there is no --auth-file: any peer that\n"
                 "           reaches it could ask for devices for any tenant. Give the tenants' keys\n"
                 "           (--auth-file FILE, as rgpud's), or --insecure to accept that.\n",
                 options.listen.c_str());
    return 2;
  }
  // The history is kept with --history, or with --config ([history]'s
  // defaults when it has none: in memory only, history.file being "").
  if (!history_file.empty()) {
    if (!history_config) history_config = rgpu::pool::HistoryOptions{};
    history_config->path = history_file;
  }
  options.history = history_config;
  if (!metrics_address.empty()) options.metrics = &registry;
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
  std::unique_ptr<rgpu::metrics::HttpExporter> exporter;  // stops before the service goes
  if (!metrics_address.empty()) {
    auto started = rgpu::metrics::HttpExporter::start(registry, metrics_address);
    if (!started.is_ok()) {
      std::fprintf(stderr, "rgpu-pool: --metrics: %s\n", started.status().message().c_str());
      return 1;
    }
    exporter = std::move(started.value());
    std::printf("rgpu-pool metrics on %s\n", exporter->address().c_str());
  }
  std::fflush(stdout);
  std::thread waiter([&stop_signals, &service] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    service.value()->stop();
  });
  const rgpu::Status s = service.value()->run();
  waiter.detach();
  exporter.reset();
  if (!s.is_ok()) {
    std::fprintf(stderr, "rgpu-pool: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
