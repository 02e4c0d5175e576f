// rgpud: the rgpu server. Executes remote clients' CUDA calls on a device.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rgpu/common/cli.h"
#include "rgpu/common/log.h"
#include "rgpu/common/metrics_http.h"
#include "rgpu/common/request_text.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/server/server.h"
#include "rgpu/pool/agent.h"
#include "rgpu/pool/net.h"
#include "config_file.h"
#include "mig.h"

namespace {

// Applies one --limit NAME=VALUE; an error message, or "" when it was good.
std::string apply_limit(const std::string& spec, rgpu::server::ServerLimits* limits) {
  const size_t eq = spec.find('=');
  uint64_t v = 0;
  if (eq == std::string::npos || !rgpu::cli::parse_u64(spec.substr(eq + 1), &v) || v == 0) {
    return "--limit wants NAME=VALUE with a positive whole number, got '" + spec + "'";
  }
  const std::string name = spec.substr(0, eq);
  if (name == "hello-timeout-ms") limits->hello_timeout = std::chrono::milliseconds(v);
  else if (name == "hello-bytes") limits->max_hello_bytes = v;
  else if (name == "unauthenticated") limits->max_unauthenticated = v;
  else if (name == "accepting") limits->max_accepting = v;
  else if (name == "accepting-per-address") limits->max_accepting_per_source = v;
  else if (name == "sessions") limits->max_sessions = v;
  else if (name == "message-bytes") limits->max_message_bytes = v;
  else if (name == "parked-frames") limits->max_parked_frames = v;
  else if (name == "parked-bytes") limits->max_parked_bytes = v;
  else if (name == "handles") limits->max_handles = v;
  else if (name == "module-bytes") limits->max_module_bytes = v;
  else if (name == "inflight-bytes") limits->max_inflight_bytes = v;
  else if (name == "waits") limits->max_session_waits = v;
  else if (name == "reply-timeout-ms") limits->reply_timeout = std::chrono::milliseconds(v);
  else return "--limit: unknown limit '" + name + "'";
  return "";
}

// The keys from --auth-file, else RGPU_AUTH_TOKEN_FILE or RGPU_AUTH_TOKEN.
rgpu::Result<rgpu::protocol::auth::KeyRing> load_keys(const std::string& auth_file) {
  namespace auth = rgpu::protocol::auth;
  if (!auth_file.empty()) {
    auto text = auth::read_secret_file(auth_file);
    if (!text.is_ok()) return text.status();
    return auth::KeyRing::parse(text.value(), auth_file);
  }
  if (const char* file = std::getenv("RGPU_AUTH_TOKEN_FILE"); file && *file) {
    auto text = auth::read_secret_file(file);
    if (!text.is_ok()) return text.status();
    return auth::KeyRing::single(text.value());
  }
  if (const char* token = std::getenv("RGPU_AUTH_TOKEN"); token && *token) return auth::KeyRing::single(token);
  return auth::KeyRing();
}

// A CUDA driver that loads and reports at least one device.
bool cuda_usable() {
  auto table = rgpu::server::DriverTable::load("libcuda.so.1");
  if (!table.is_ok()) return false;
  int count = 0;
  return table.value()->cuInit(0) == CUDA_SUCCESS && table.value()->cuDeviceGetCount(&count) == CUDA_SUCCESS &&
         count > 0;
}

constexpr int kMaxCpuDevices = 16;

// The CPU device reads its configuration from the environment when it is
// loaded (docs/cpu-device.md): N devices, and, unless the operator chose a
// thread count, an equal share of the cores for each device's kernel
// workers, so that N devices do not run N times the cores' worth of threads.
void configure_cpu_devices(int n) {
  setenv("RGPU_CPU_DEVICES", std::to_string(n).c_str(), 1);
  if (const char* t = std::getenv("RGPU_CPU_THREADS"); t && *t) return;
  const unsigned hw = std::thread::hardware_concurrency();
  const unsigned share = std::max(1u, (hw ? hw : 1u) / static_cast<unsigned>(n));
  setenv("RGPU_CPU_THREADS", std::to_string(share).c_str(), 1);
}

// The transport's share of the limits. Every connection costs descriptors
// (a socket per transport lane, more with shared memory), and UCX does not
// survive running out of them (its socket connection manager then closes
// descriptors twice; docs/security.md). So rgpud takes all the descriptors
// it is allowed, and unless --limit says otherwise bounds the connections
// that have not said the transport's hello by them. The transport's hello
// comes right after the connection, so the handshake's time limit bounds it
// too.
void apply_transport_limits(const rgpu::server::ServerLimits& limits, rgpu::transport::UcxOptions* ucx) {
  ucx->hello_timeout = limits.hello_timeout;
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur < fds.rlim_max) {
    rlimit raised = fds;
    raised.rlim_cur = fds.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) fds = raised;
  }
  constexpr size_t kReserved = 256;      // sessions' own, the device, logs, metrics
  // Sockets and pipes of one connection with its own UCX worker (its event
  // fds, a tcp listening socket per interface, the shared-memory signal
  // socket), generously.
  constexpr size_t kPerConnection = 24;
  const size_t total = fds.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(fds.rlim_cur);
  const size_t by_fds = total > kReserved ? (total - kReserved) / kPerConnection : 1;
  ucx->max_accepting = limits.max_accepting ? limits.max_accepting : std::clamp<size_t>(by_fds, 8, 256);
  ucx->max_accepting_per_source = limits.max_accepting_per_source
                                      ? limits.max_accepting_per_source
                                      : std::max<size_t>(4, ucx->max_accepting / 4);
  // RGPU_WORKER_PER_PEER=0 puts every connection on one UCX worker again
  // (docs/transport.md, "A worker per peer"): for comparison only.
  if (const char* v = std::getenv("RGPU_WORKER_PER_PEER"); v != nullptr && std::string(v) == "0") {
    ucx->worker_per_peer = false;
  }
  RGPU_INFO("descriptors limit=%zu pre_hello_connections=%zu per_address=%zu worker_per_peer=%d", total,
            ucx->max_accepting, ucx->max_accepting_per_source, ucx->worker_per_peer ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::log::set_component("rgpud");
  rgpu::server::ServerOptions options;
  rgpu::transport::UcxOptions ucx_options;
  std::string device = "auto";
  std::string driver_path;
  std::string auth_file;
  std::string admin_key_file;
  int shutdown_timeout_s = 10;
  int cpu_devices = 0;  // 0: not given
  std::string pool_list;
  std::string pool_key_file;
  std::string advertise;
  std::string metrics_address;
  // --config's values, applied where it stands among the options.
  auto apply_config = [&](const std::string& path) -> std::string {
    auto config = rgpu::server::load_config(path);
    if (!config.is_ok()) return config.status().message();
    const rgpu::server::ConfigFile& c = config.value();
    if (c.device) device = *c.device;
    if (c.cpu_devices) {
      if (*c.cpu_devices < 1 || *c.cpu_devices > kMaxCpuDevices) {
        return path + ": cpu-devices wants a number from 1 to " + std::to_string(kMaxCpuDevices);
      }
      cpu_devices = static_cast<int>(*c.cpu_devices);
    }
    if (c.session_memory) options.session_memory = *c.session_memory;
    if (c.max_sessions_per_slice) {
      if (*c.max_sessions_per_slice < 1 || *c.max_sessions_per_slice > UINT32_MAX) {
        return path + ": max-sessions-per-slice wants a number from 1";
      }
      options.max_sessions_per_slice = static_cast<uint32_t>(*c.max_sessions_per_slice);
    }
    options.slices.insert(options.slices.end(), c.slices.begin(), c.slices.end());
    if (c.metrics) metrics_address = *c.metrics;
    return {};
  };
  namespace cli = rgpu::cli;
  cli::Parser parser(
      "rgpud", "[OPTIONS]",
      "rgpud prints \"rgpud listening on HOST:PORT\" on stdout once it accepts clients, and, with --metrics, "
      "\"rgpud metrics on HOST:PORT\" before it.");
  parser
      .add(cli::text("--listen", "HOST:PORT", "address to accept clients on (default 127.0.0.1:0: a free port)",
                     &options.listen))
      .add(cli::text("--device", "KIND",
                     "cuda: the system libcuda.so.1; cpu: rgpu's CPU device; auto (default): cuda when a GPU "
                     "answers, else cpu",
                     &device))
      .add(cli::number("--cpu-devices", "N",
                       "with the CPU device: serve N virtual devices (1 to 16, default 1), each with "
                       "RGPU_CPU_DEVICE_MEMORY of memory (default 4G) and 1/N of the cores as kernel workers "
                       "unless RGPU_CPU_THREADS says",
                       1, kMaxCpuDevices, [&](uint64_t v) { cpu_devices = static_cast<int>(v); }))
      .add(cli::text("--driver", "PATH", "load this driver library instead (overrides --device)", &driver_path))
      .add({"--library", "NAME=PATH",
            "load this file for remoted library NAME (cublas) instead of NVIDIA's (cuda) or rgpu's CPU stand-in "
            "next to rgpud (cpu)",
            [&](const std::string& v) -> std::string {
              const size_t eq = v.find('=');
              if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
                return "--library wants NAME=PATH, got '" + v + "'";
              }
              options.libraries[v.substr(0, eq)] = v.substr(eq + 1);
              return {};
            }})
      .add(cli::text("--auth-file", "FILE",
                     "the keys clients must prove, one \"TENANT SECRET\" per line (or a lone SECRET for tenant "
                     "\"default\"); the file must be private (chmod 600). Without it, RGPU_AUTH_TOKEN or "
                     "RGPU_AUTH_TOKEN_FILE in rgpud's environment gives the default tenant's secret. Secrets are "
                     "never taken from the command line, where every user can read them.",
                     &auth_file))
      .add({"--auth-token", "", "",
            [](const std::string&) -> std::string {
              return "--auth-token is gone: a secret on the command line is visible to every user in ps.\n"
                     "       Put it in a private file (--auth-file FILE, chmod 600) or in RGPU_AUTH_TOKEN.";
            },
            true})
      .add(cli::text("--admin-key-file", "FILE",
                     "the key of operator requests (rgpu session list, with RGPU_ADMIN_KEY_FILE naming a file that "
                     "holds the same key); the file must be private (chmod 600). Without it operator requests are "
                     "refused.",
                     &admin_key_file))
      .add(cli::flag("--insecure", "allow a non-loopback --listen without authentication", &options.insecure))
      .add({"--integrity", "MODE",
            "per-message integrity after the handshake (AES-GCM tags keyed by it; needs keys): auto (default) "
            "seals every session from another host, on seals every session (clients that cannot are refused), "
            "off seals none (clients that insist are refused)",
            [&](const std::string& v) -> std::string {
              const auto mode = rgpu::protocol::parse_integrity_mode(v);
              if (!mode || v.empty()) return "--integrity wants auto, on or off, got '" + v + "'";
              options.integrity = *mode;
              return {};
            }})
      .add({"--log-level", "LEVEL", "error, warn, info (default), debug or trace",
            [](const std::string& v) -> std::string {
              rgpu::log::Level level;
              if (!rgpu::log::parse_level(v, &level)) return "unknown log level '" + v + "'";
              rgpu::log::set_level(level);
              return {};
            }})
      .add(cli::text("--module-cache", "DIR",
                     "keep module images in DIR (created 0700) across restarts: a program run again sends no "
                     "module bytes",
                     &options.module_cache_dir))
      .add(cli::number("--module-cache-mem", "BYTES", "image bytes kept in memory (default 1 GiB)", 0, UINT64_MAX,
                       [&](uint64_t v) { options.module_cache_memory = v; }))
      .add(cli::size("--session-memory", "SIZE",
                     "the most device memory one session may hold on each device (e.g. 512M, 2G; default 0: no "
                     "limit); a client asks for less with RGPU_REQUEST=mem=SIZE, more is refused at connect",
                     false, [&](uint64_t v) { options.session_memory = v; }))
      .add(cli::list("--slices", "DEV:SIZE@SHARE[,SIZE@SHARE...]",
                     "cut device DEV into slices, each with SIZE of memory (an exact quota) and SHARE (0 to 1) of "
                     "its compute, e.g. 0:2G@0.5,1G@0.25,1G@0.25; repeat for more devices. A session sees only the "
                     "slices it was admitted to (docs/sharing.md)",
                     &options.slices))
      .add(cli::number("--max-sessions-per-slice", "N",
                       "sessions one slice holds at once (default: 1 for a configured slice, any number for a "
                       "whole device)",
                       1, UINT32_MAX, [&](uint64_t v) { options.max_sessions_per_slice = static_cast<uint32_t>(v); }))
      .add({"--config", "FILE",
            "read these options from a TOML file (docs/sharing.md); options after it on the command line "
            "override it",
            apply_config})
      .add(cli::size("--session-inflight-bytes", "SIZE",
                     "host bytes one session's async copies may hold in flight on the server (e.g. 64M; default "
                     "1G); a copy past it waits for the earlier ones to land; one larger than it fails with "
                     "CUDA_ERROR_OUT_OF_MEMORY, the session goes on",
                     true, [&](uint64_t v) { options.limits.max_inflight_bytes = v; }))
      .add(cli::number("--session-waits", "N",
                       "waits and copy completions one session may have pending at once (default 4096); past it a "
                       "synchronize is served on the session's own thread, one at a time, and an async "
                       "device-to-host copy fails with CUDA_ERROR_OUT_OF_MEMORY",
                       1, UINT64_MAX, [&](uint64_t v) { options.limits.max_session_waits = v; }))
      .add(cli::number("--poller-threads", "N",
                       "threads of each device's completion poller, which finishes the waits and copies of every "
                       "session on the device (1 to 64, default 2); a session itself has one thread",
                       1, 64, [&](uint64_t v) { options.poller_threads = v; }))
      .add(cli::number("--poll-us", "US",
                       "how long the transport thread keeps polling after a message before it sleeps (default "
                       "30): longer saves wakeups, costs CPU",
                       0, 1000000, [&](uint64_t v) { ucx_options.idle_spin = std::chrono::microseconds(v); }))
      .add({"--limit", "NAME=VALUE",
            "one of the per-client limits (docs/security.md, \"Limits\"): accepting, accepting-per-address, "
            "hello-timeout-ms, hello-bytes, unauthenticated, sessions, message-bytes, parked-frames, "
            "parked-bytes, handles, module-bytes, inflight-bytes, waits, reply-timeout-ms",
            [&](const std::string& v) { return apply_limit(v, &options.limits); }})
      .add(cli::text("--pool", "HOST:PORT[,...]",
                     "join rgpu-pool (docs/pool.md): register this server's devices and slices, heartbeat every "
                     "second, and admit only sessions that present a lease the pool signed for this server",
                     &pool_list))
      .add(cli::text("--pool-key-file", "FILE", "the pool's lease-signing key (chmod 600), as rgpu-pool's --key-file",
                     &pool_key_file))
      .add(cli::text("--pool-id", "ID", "this server's id in the pool (default: the --advertise address)",
                     &options.pool_id))
      .add(cli::text("--advertise", "HOST:PORT",
                     "the address clients reach this server at (default: the bound --listen address)", &advertise))
      .add(cli::text("--metrics", "HOST:PORT",
                     "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: a free one; docs/metrics.md). "
                     "It has no authentication: bind it to loopback or a management network",
                     &metrics_address))
      .add(cli::number("--shutdown-timeout", "SECONDS",
                       "on SIGTERM or SIGINT, how long the sessions' teardown may take before rgpud exits anyway "
                       "(default 10)",
                       1, 3600, [&](uint64_t v) { shutdown_timeout_s = static_cast<int>(v); }));
  if (const int answered = parser.parse_or_answer(argc, argv,
                                                   std::string("rgpud ") + RGPU_VERSION_STRING + " (protocol " +
                                                       std::to_string(rgpu::wire::PROTOCOL_VERSION) + ")");
      answered >= 0) {
    return answered;
  }
  std::string host;
  uint16_t port;
  if (!rgpu::transport::split_host_port(options.listen, &host, &port)) {
    std::fprintf(stderr, "rgpud: --listen wants HOST:PORT, got '%s'\n", options.listen.c_str());
    return 2;
  }
  if (driver_path.empty() && device != "cpu") {
    // MIG instances are devices of their own, opened by UUID: name them all
    // before the driver starts (it enumerates what CUDA_VISIBLE_DEVICES says).
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (auto mig = rgpu::server::discover_mig(); mig.instances > 0 && visible == nullptr) {
      std::string list;
      for (const auto& id : mig.devices) list += (list.empty() ? "" : ",") + id;
      setenv("CUDA_VISIBLE_DEVICES", list.c_str(), 1);
      RGPU_INFO("mig instances=%zu devices=%zu: each instance is a device of its own, opened by uuid (%s)",
                mig.instances, mig.devices.size(), list.c_str());
    } else if (mig.instances > 0) {
      RGPU_INFO("mig instances=%zu; CUDA_VISIBLE_DEVICES is set, so rgpud opens what it names", mig.instances);
    }
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

  if (cpu_devices != 0) {
    if (device == "cuda") {
      std::fprintf(stderr, "rgpud: --cpu-devices applies to the CPU device only (--device cpu)\n");
      return 2;
    }
    configure_cpu_devices(cpu_devices);
  }

  auto keys = load_keys(auth_file);
  if (!keys.is_ok()) {
    std::fprintf(stderr, "rgpud: %s\n", keys.status().message().c_str());
    return 2;
  }
  options.keys = std::move(keys.value());
  if (!admin_key_file.empty()) {
    auto key = rgpu::protocol::auth::read_key_file(admin_key_file);
    if (!key.is_ok()) {
      std::fprintf(stderr, "rgpud: --admin-key-file: %s\n", key.status().message().c_str());
      return 2;
    }
    options.admin_key = std::move(key.value());
  }

  std::vector<std::string> pool_addresses;
  if (!pool_list.empty() || !pool_key_file.empty()) {
    if (pool_list.empty() || pool_key_file.empty()) {
      std::fprintf(stderr, "rgpud: --pool and --pool-key-file go together\n");
      return 2;
    }
    auto addresses = rgpu::pool::net::parse_addresses(pool_list);
    if (!addresses.is_ok()) {
      std::fprintf(stderr, "rgpud: --pool: %s\n", addresses.status().message().c_str());
      return 2;
    }
    pool_addresses = addresses.value();
    auto key = rgpu::protocol::auth::read_key_file(pool_key_file);
    if (!key.is_ok()) {
      std::fprintf(stderr, "rgpud: --pool-key-file: %s\n", key.status().message().c_str());
      return 2;
    }
    options.pool_key = key.value();
    if (options.pool_id.empty()) options.pool_id = advertise;
  }
  // The pool's agent comes after the server; sessions ending before it
  // exists have no lease anyway (no pool, no lease).
  struct AgentSlot {
    std::mutex mu;
    std::unique_ptr<rgpu::pool::Agent> agent;
  };
  auto agent_slot = std::make_shared<AgentSlot>();
  if (!pool_addresses.empty()) {
    options.on_lease_session_end = [agent_slot](uint64_t lease) {
      std::lock_guard<std::mutex> lock(agent_slot->mu);
      if (agent_slot->agent) agent_slot->agent->session_ended(lease);
    };
  }

  // Signals are taken synchronously below; block them before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (device == "cuda" && !options.slices.empty()) {
    // Which mechanism holds the slices' compute shares (docs/sharing.md).
    const bool mps = rgpu::server::mps_daemon_running();
    const bool green = rgpu::server::driver_has_green_contexts(driver_path);
    RGPU_INFO("compute shares by rgpud's timing of each slice's kernels (mps daemon=%s green contexts=%s: "
              "detected, not used)",
              mps ? "running" : "none", green ? "available" : "none");
  }
  auto driver = rgpu::server::DriverTable::load(driver_path);
  if (!driver.is_ok()) {
    std::fprintf(stderr, "rgpud: %s\n", driver.status().message().c_str());
    return 1;
  }
  apply_transport_limits(options.limits, &ucx_options);
  auto transport = rgpu::transport::make_ucx_transport(ucx_options);
  if (!transport.is_ok()) {
    std::fprintf(stderr, "rgpud: cannot start UCX: %s\n", transport.status().message().c_str());
    return 1;
  }
  // Declared before the server, which records into it, so it outlives it.
  rgpu::metrics::Registry registry;
  if (!metrics_address.empty()) options.metrics = &registry;
  auto server = rgpu::server::Server::start(driver.value(), std::move(transport.value()), options);
  if (!server.is_ok()) {
    std::fprintf(stderr, "rgpud: %s\n", server.status().message().c_str());
    return 1;
  }
  std::unique_ptr<rgpu::metrics::HttpExporter> exporter;  // stops before the server goes
  if (!metrics_address.empty()) {
    auto started = rgpu::metrics::HttpExporter::start(registry, metrics_address);
    if (!started.is_ok()) {
      std::fprintf(stderr, "rgpud: --metrics: %s\n", started.status().message().c_str());
      return 1;
    }
    exporter = std::move(started.value());
    RGPU_INFO("metrics endpoint=http://%s/metrics", exporter->address().c_str());
    std::printf("rgpud metrics on %s\n", exporter->address().c_str());
  }
  std::printf("rgpud listening on %s driver=%s\n", server.value()->address().c_str(), driver_path.c_str());
  std::fflush(stdout);
  if (!pool_addresses.empty()) {
    rgpu::server::Server* srv = server.value().get();
    rgpu::pool::AgentOptions agent_options;
    agent_options.pool = pool_addresses;
    agent_options.key = options.pool_key;
    agent_options.server.id = srv->pool_id();
    agent_options.server.address = advertise.empty() ? srv->address() : advertise;
    for (const auto& d : srv->pool_devices()) {
      rgpu::pool::Device device;
      device.index = d.index;
      device.kind = d.cpu ? "cpu" : d.name;
      device.compute_capability = d.compute_capability;
      device.memory_bytes = d.memory;
      for (size_t i = 0; i < d.slices.size(); ++i) {
        device.slices.push_back(rgpu::pool::Slice{static_cast<uint32_t>(i), d.slices[i].memory, d.slices[i].share,
                                                  d.slices[i].max_sessions});
      }
      agent_options.server.devices.push_back(std::move(device));
    }
    rgpu::pool::AgentHooks hooks;
    hooks.sample = [srv] {
      std::vector<rgpu::pool::DeviceUse> use;
      for (const auto& d : srv->pool_devices()) use.push_back({d.index, d.memory_reserved, d.utilization});
      return std::make_pair(use, static_cast<uint32_t>(srv->session_count()));
    };
    hooks.end_lease = [srv](uint64_t lease, const std::string& why) { srv->end_lease(lease, why); };
    RGPU_INFO("pool mode id=%s advertise=%s pool=%s", agent_options.server.id.c_str(),
              agent_options.server.address.c_str(), pool_list.c_str());
    std::lock_guard<std::mutex> lock(agent_slot->mu);
    agent_slot->agent = rgpu::pool::Agent::start(std::move(agent_options), std::move(hooks));
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  RGPU_INFO("stopping signal=%d sessions=%zu", sig, server.value()->session_count());
  // Teardown frees every session's device resources; it is bounded (a
  // runaway kernel is stopped), but a device that no longer answers must not
  // keep rgpud alive: past the timeout, or at a second signal, exit anyway.
  std::thread watchdog([&stop_signals, shutdown_timeout_s] {
    timespec timeout{shutdown_timeout_s, 0};
    const int again = sigtimedwait(&stop_signals, nullptr, &timeout);
    RGPU_ERROR("teardown %s; exiting without it", again > 0 ? "interrupted by a second signal" : "timed out");
    std::fflush(nullptr);
    _exit(again > 0 ? 128 + again : 1);
  });
  watchdog.detach();
  exporter.reset();
  {
    std::unique_ptr<rgpu::pool::Agent> agent;
    {
      std::lock_guard<std::mutex> lock(agent_slot->mu);
      agent.swap(agent_slot->agent);
    }
    agent.reset();  // before the server its hooks call
  }
  server.value().reset();
  RGPU_INFO("stopped");
  return 0;
}
