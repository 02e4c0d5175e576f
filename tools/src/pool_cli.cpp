// `rgpu run --pool` and `rgpu pool status`.
#include "pool_cli.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>

#include "rgpu/common/request_text.h"
#include "rgpu/pool/wire.h"

namespace rgpu::tools {

bool PoolRun::take(int argc, char** argv, int* i, std::string* error) {
  const std::string arg = argv[*i];
  std::string* slot = arg == "--pool"       ? &pool_
                      : arg == "--kind"     ? &kind_
                      : arg == "--min-cc"   ? &min_cc_
                      : arg == "--priority" ? &priority_
                      : arg == "--tenant"   ? &tenant_
                      : arg == "--timeout"  ? &timeout_
                                            : nullptr;
  if (slot == nullptr) return false;
  if (*i + 1 >= argc) {
    *error = arg + " needs a value";
    return true;
  }
  *slot = argv[++*i];
  return true;
}

bool PoolRun::active() const {
  if (!pool_.empty()) return true;
  const char* env = std::getenv("RGPU_POOL");
  return env != nullptr && *env != '\0';
}

int PoolRun::lease(const std::string& request_text, const std::string& program,
                   const std::function<void(const pool::client::QueueNotice&)>& on_queued, pool::client::Held* out,
                   std::string* error) const {
  pool::client::AcquireOptions options;
  auto fail = [&](const std::string& why) {
    *error = why;
    return 2;
  };
  auto addresses = pool::net::parse_addresses(pool_.empty() ? std::getenv("RGPU_POOL") : pool_);
  if (!addresses.is_ok()) return fail(addresses.status().message());
  options.pool = addresses.value();
  if (Status s = pool::client::request_from_environment(&options.request); !s.is_ok()) return fail(s.message());
  if (!request_text.empty()) {
    auto r = parse_request(request_text);
    if (!r.is_ok()) return fail(r.status().message());
    if (r.value().devices) options.request.devices = r.value().devices;
    if (r.value().memory_bytes) options.request.memory_bytes = r.value().memory_bytes;
    if (r.value().share) options.request.share = r.value().share;
  }
  if (!kind_.empty()) {
    auto k = pool::parse_kind_wanted(kind_);
    if (!k.is_ok()) return fail("--kind: " + k.status().message());
    options.request.kind = k.value();
  }
  if (!min_cc_.empty()) {
    auto cc = pool::client::parse_compute_capability(min_cc_);
    if (!cc.is_ok()) return fail("--min-cc: " + cc.status().message());
    options.request.min_compute_capability = cc.value();
  }
  if (!priority_.empty()) {
    auto p = pool::parse_priority(priority_);
    if (!p.is_ok()) return fail("--priority: " + p.status().message());
    options.request.priority = p.value();
  }
  if (!tenant_.empty()) options.request.tenant = tenant_;
  if (!timeout_.empty()) {
    char* end = nullptr;
    const double s = std::strtod(timeout_.c_str(), &end);
    if (end == timeout_.c_str() || *end != '\0' || !(s > 0)) return fail("--timeout wants seconds above 0");
    options.request.timeout_ms = static_cast<pool::Millis>(s * 1000);
  }
  options.program = program;
  auto secret = pool::client::secret_from_environment();
  if (!secret.is_ok()) return fail(secret.status().message());
  options.secret = secret.value();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  options.hostname = host;
  options.on_queued = on_queued;
  auto held = pool::client::acquire(options);
  if (!held.is_ok()) {
    *error = held.status().message();
    return held.status().kind() == ErrorKind::kFailed ? 3 : 2;
  }
  *out = std::move(held.value());
  return 0;
}

int PoolRun::acquire(const std::string& request_text, const std::string& program) {
  bool waited = false;
  auto progress = pool::client::stderr_progress("rgpu run");
  pool::client::Held held;
  std::string error;
  const int rc = lease(
      request_text, program,
      [&](const pool::client::QueueNotice& notice) {
        waited = true;
        progress(notice);
      },
      &held, &error);
  if (waited && isatty(2)) std::fputc('\n', stderr);
  if (rc != 0) {
    std::fprintf(stderr, "rgpu run: %s\n", error.c_str());
    return rc;
  }
  servers_ = pool::client::server_list(held.placement);
  held_ = std::move(held);
  return 0;
}

std::vector<std::pair<std::string, std::string>> PoolRun::settings_for_children() const {
  std::vector<std::pair<std::string, std::string>> out;
  const char* env_pool = std::getenv("RGPU_POOL");
  const std::string pool = !pool_.empty() ? pool_ : env_pool != nullptr ? env_pool : "";
  if (!pool.empty()) out.emplace_back("RGPU_POOL", pool);
  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{"RGPU_POOL_KIND", &kind_},
                                    {"RGPU_POOL_MIN_CC", &min_cc_},
                                    {"RGPU_POOL_PRIORITY", &priority_},
                                    {"RGPU_TENANT", &tenant_},
                                    {"RGPU_POOL_TIMEOUT", &timeout_}}) {
    if (!value->empty()) out.emplace_back(name, *value);
  }
  return out;
}

namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fG", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

std::string text(capnp::Text::Reader t) {
  auto r = pool::wire::read_text(t, "text", 4096);
  return r.is_ok() ? r.value() : "?";
}

void print_placement(capnp::List<poolwire::PlacedDevice>::Reader placement) {
  for (auto p : placement) {
    std::printf("      %s device %u slice %u mem %s share %.2f\n", text(p.getServerId()).c_str(), p.getDevice(),
                p.getSlice(), gib(p.getMemoryBytes()).c_str(), p.getShareUnits() / 10000.0);
  }
}

int status(int argc, char** argv) {
  std::string pool;
  if (const char* env = std::getenv("RGPU_POOL")) pool = env;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pool" && i + 1 < argc) {
      pool = argv[++i];
    } else {
      std::fprintf(stderr, "usage: rgpu pool status [--pool HOST:PORT[,HOST:PORT...]]\n");
      return 2;
    }
  }
  if (pool.empty()) {
    std::fprintf(stderr, "rgpu pool status: no pool (--pool HOST:PORT or RGPU_POOL)\n");
    return 2;
  }
  auto addresses = pool::net::parse_addresses(pool);
  if (!addresses.is_ok()) {
    std::fprintf(stderr, "rgpu pool status: %s\n", addresses.status().message().c_str());
    return 2;
  }
  auto reply = pool::client::query_status(addresses.value(), std::chrono::milliseconds(5000));
  if (!reply.is_ok()) {
    std::fprintf(stderr, "rgpu pool status: %s\n", reply.status().message().c_str());
    return 1;
  }
  try {
    auto s = reply.value().root().getStatus();
    const int64_t now = s.getNowMs();
    // The sessions of each lease, by server, for the device lines.
    std::map<std::pair<std::string, uint32_t>, std::vector<std::string>> holders;
    for (auto l : s.getLeases()) {
      for (auto p : l.getPlacement()) {
        holders[{text(p.getServerId()), p.getDevice()}].push_back(
            "lease " + std::to_string(l.getId()) + " " + text(l.getTenant()) + "/" + text(l.getProgram()) + " " +
            gib(p.getMemoryBytes()) + " slice " + std::to_string(p.getSlice()));
      }
    }
    std::printf("servers: %u\n", s.getServers().size());
    for (auto srv : s.getServers()) {
      std::printf("  %s at %s: %u session(s), %u lease(s), heartbeat %.1f s ago\n", text(srv.getId()).c_str(),
                  text(srv.getAddress()).c_str(), srv.getSessions(), srv.getLeases(),
                  static_cast<double>(now - srv.getLastHeartbeatMs()) / 1000.0);
      for (auto d : srv.getDevices()) {
        uint64_t used = 0;
        for (auto u : srv.getUse()) {
          if (u.getIndex() == d.getIndex()) used = u.getMemoryUsedBytes();
        }
        std::printf("    device %u %s cc %u.%u memory %s/%s", d.getIndex(), text(d.getKind()).c_str(),
                    d.getComputeCapability() / 10, d.getComputeCapability() % 10, gib(used).c_str(),
                    gib(d.getMemoryBytes()).c_str());
        if (d.getSlices().size() == 0) std::printf(" (whole)");
        std::printf("\n");
        for (auto sl : d.getSlices()) {
          std::printf("      slice %u: %s share %.2f sessions <= %u\n", sl.getId(), gib(sl.getMemoryBytes()).c_str(),
                      sl.getShareUnits() / 10000.0, sl.getMaxSessions());
        }
        for (const auto& h : holders[{text(srv.getId()), d.getIndex()}]) std::printf("      held: %s\n", h.c_str());
      }
    }
    std::printf("leases: %u\n", s.getLeases().size());
    for (auto l : s.getLeases()) {
      std::printf("  lease %llu tenant %s priority %d program %s@%s, %.0f s old, expires in %.0f s\n",
                  static_cast<unsigned long long>(l.getId()), text(l.getTenant()).c_str(), l.getPriority(),
                  text(l.getProgram()).c_str(), text(l.getHostname()).c_str(),
                  static_cast<double>(now - l.getIssuedMs()) / 1000.0,
                  static_cast<double>(l.getExpiryMs() - now) / 1000.0);
      print_placement(l.getPlacement());
    }
    std::printf("queue: %u\n", s.getQueue().size());
    unsigned pos = 0;
    for (auto q : s.getQueue()) {
      auto r = q.getRequest();
      std::printf("  %u. ticket %llu tenant %s priority %d: %u x %s %s, program %s, waiting %.0f s\n", ++pos,
                  static_cast<unsigned long long>(q.getTicket()), text(r.getTenant()).c_str(), r.getPriority(),
                  r.getDevices(), r.getMemoryBytes() ? gib(r.getMemoryBytes()).c_str() : "whole",
                  text(r.getKind()).c_str(), text(r.getProgram()).c_str(),
                  static_cast<double>(now - q.getSinceMs()) / 1000.0);
      if (q.hasWhy()) std::printf("      waiting: %s\n", text(q.getWhy()).c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rgpu pool status: malformed reply: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int pool_command(int argc, char** argv) {
  const std::string sub = argc > 0 ? argv[0] : "";
  if (sub == "status") return status(argc - 1, argv + 1);
  if (sub == "hold") return hold_command(argc - 1, argv + 1);
  if (sub == "slurm-licenses") return slurm_licenses_command(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: rgpu pool status|hold|slurm-licenses ... (rgpu --help)\n");
  return 2;
}

void PoolRun::export_for_child() const {
  if (!held_) return;
  setenv("RGPU_LEASE", held_->token.c_str(), 1);
  setenv("RGPU_LEASE_PID", std::to_string(getpid()).c_str(), 1);  // exec keeps the pid
  for (const auto& [name, value] : settings_for_children()) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace rgpu::tools
