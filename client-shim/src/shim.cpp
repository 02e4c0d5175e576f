// The client library's process state and its one-time initialisation.
#include "shim.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "rgpu/common/log.h"
#include "rgpu/pool/client.h"
#include "rgpu/protocol/auth.h"
#include "visible_devices.h"

namespace rgpu::shim {
namespace {

enum class Phase { kNone, kReady, kFailed, kDeinitialized };

// The only global state of the library: created by the first cuInit, torn
// down by the exit handler registered then.
std::once_flag g_init_once;
std::atomic<Phase> g_phase{Phase::kNone};
std::atomic<Shim*> g_shim{nullptr};
CUresult g_init_result = CUDA_ERROR_NOT_INITIALIZED;

void shutdown_at_exit() {
  Shim* shim = g_shim.exchange(nullptr);
  g_phase = Phase::kDeinitialized;
  if (shim) {
    shim->flush_all();
    delete shim;  // closes the session; the server frees what it held
  }
}

ClientOptions options_from_environment(std::string* problem, std::string* pool) {
  ClientOptions o;
  const char* server = std::getenv("RGPU_SERVER");
  // A lease `rgpu run --pool` got for another process (this one's parent):
  // its server and lease are not this process's to use, and RGPU_POOL (which
  // rgpu run leaves set) gets this process a lease of its own.
  if (!lease_is_ours() && std::getenv("RGPU_POOL") != nullptr) server = nullptr;
  const char* pool_env = std::getenv("RGPU_POOL");
  if ((!server || !*server) && pool_env && *pool_env) {
    *pool = pool_env;  // the servers come from the pool's placement
  } else if (!server || !*server) {
    *problem = "RGPU_SERVER is not set (host:port of rgpud; or RGPU_POOL, host:port of rgpu-pool); start programs "
               "with 'rgpu run'";
    return o;
  } else {
    o.server = server;
  }
  if (const char* t = std::getenv("RGPU_TENANT"); t && *t) o.tenant = t;
  auto secret = pool::client::secret_from_environment();
  if (!secret.is_ok()) {
    *problem = secret.status().message();
    return o;
  }
  o.auth_token = std::move(secret.value());
  if (const char* v = std::getenv("RGPU_INTEGRITY"); v && *v) {
    const auto mode = protocol::parse_integrity_mode(v);
    if (!mode || *mode == protocol::IntegrityMode::kOff) {
      *problem = std::string("RGPU_INTEGRITY wants on or auto, got '") + v +
                 "' (a client cannot turn off what its server requires)";
      return o;
    }
    o.integrity = *mode;
  }
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) o.visible_devices = v;
  if (const char* t = std::getenv("RGPU_CONNECT_TIMEOUT_MS")) {
    long ms = std::strtol(t, nullptr, 10);
    if (ms > 0) o.connect_timeout = std::chrono::milliseconds(ms);
  }
  return o;
}

thread_local std::vector<uint64_t> t_context_stack;

// RGPU_POOL without RGPU_SERVER: asks the pool for RGPU_REQUEST's devices
// (and RGPU_POOL_*'s kind, capability, priority, timeout), waiting in its
// queue with a progress line on stderr, then points `options` at the servers
// it chose, with its lease. The connection that holds the lease is returned,
// to be kept as long as the sessions.
Result<std::shared_ptr<pool::client::Held>> lease_from_pool(const std::string& list, ClientOptions* options) {
  auto addresses = pool::net::parse_addresses(list);
  if (!addresses.is_ok()) return invalid_argument("RGPU_POOL: " + addresses.status().message());
  pool::client::AcquireOptions acquire;
  acquire.pool = addresses.value();
  if (Status s = pool::client::request_from_environment(&acquire.request); !s.is_ok()) return s;
  if (const char* t = std::getenv("RGPU_TENANT"); t && *t) acquire.request.tenant = t;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  acquire.hostname = host;
  acquire.program = program_invocation_short_name;
  acquire.secret = options->auth_token;  // the tenant's key, which rgpud checks too
  bool waited = false;
  auto progress = pool::client::stderr_progress("rgpu");
  acquire.on_queued = [&](const pool::client::QueueNotice& notice) {
    waited = true;
    progress(notice);
  };
  auto held = pool::client::acquire(acquire);
  if (waited && isatty(2)) std::fputc('\n', stderr);  // ends the line rewritten in place
  if (!held.is_ok()) return held.status();
  options->server = pool::client::server_list(held.value().placement);
  options->request.lease = held.value().token;
  RGPU_INFO("pool lease=%llu servers=%s waited_ms=%lld", static_cast<unsigned long long>(held.value().id),
            options->server.c_str(), static_cast<long long>(held.value().waited_ms));
  return std::make_shared<pool::client::Held>(std::move(held.value()));
}

}  // namespace

Shim::Shim(std::vector<std::unique_ptr<Client>> clients, const std::optional<std::string>& visible)
    : clients_(std::move(clients)), servers_(clients_.size()) {
  // Each server's devices in turn, then CUDA_VISIBLE_DEVICES over all of them.
  std::vector<DeviceInfo> all;
  std::vector<size_t> all_server;
  for (size_t s = 0; s < servers_; ++s) {
    for (const DeviceInfo& d : clients_[s]->devices()) {
      all.push_back(d);
      all_server.push_back(s);
    }
  }
  if (!visible) {
    devices_ = std::move(all);
    device_server_ = std::move(all_server);
  } else {
    std::vector<CUuuid> uuids;
    for (const auto& d : all) uuids.push_back(d.uuid);
    for (int i : select_visible(*visible, uuids)) {
      devices_.push_back(all[static_cast<size_t>(i)]);
      device_server_.push_back(all_server[static_cast<size_t>(i)]);
    }
    RGPU_INFO("visible devices=%zu of=%zu servers=%zu spec=\"%s\"", devices_.size(), all.size(), servers_,
              visible->c_str());
  }
  primary_refs_.assign(devices_.size(), 0);
  primary_flags_.assign(devices_.size(), 0);
}

const DeviceInfo* Shim::device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count()) return nullptr;
  return &devices_[static_cast<size_t>(ordinal)];
}

void Shim::flush_all() {
  for (auto& c : clients_) c->flush();
}

uint64_t Shim::some_context(size_t server) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (device_server_[d] == server) return primary_handle(static_cast<int>(d));
  }
  // A server none of whose devices is visible: its first device.
  return route::primary_context(server, 0);
}

Route Shim::route_handle(uint64_t h, uint64_t ctx) {
  if (servers_ == 1) return Route{clients_[0].get(), ctx, 0};
  if (h == 0 || (!protocol::is_minted(protocol::without_server(h)) && !protocol::is_primary_context(protocol::without_server(h)))) {
    return route_current(ctx);
  }
  const size_t s = protocol::server_of(h);
  if (s >= servers_) return route_current(ctx);
  if (s == protocol::server_of(ctx) && ctx != 0) return Route{clients_[s].get(), ctx, s};
  if (protocol::kind_of(h) == HandleKind::kContext) return Route{clients_[s].get(), h, s};
  uint64_t own = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(h);
    if (it != handles_.end() && protocol::server_of(it->second.ctx) == s) own = it->second.ctx;
  }
  return Route{clients_[s].get(), own != 0 ? own : some_context(s), s};
}

Route Shim::route_pointer(uint64_t p, uint64_t ctx) {
  if (servers_ == 1) return Route{clients_[0].get(), ctx, 0};
  auto range = allocations_.find(p);
  if (!range) return route_current(ctx);
  // In the allocation's own context: a server checks an address against
  // the context's device, and the current context may be another device's.
  return Route{clients_[range->server].get(), range->ctx != 0 ? range->ctx : ctx, range->server};
}

CUresult Shim::track_allocation(size_t server, uint64_t base, uint64_t size, uint64_t ctx) {
  if (servers_ == 1) return CUDA_SUCCESS;
  auto clash = allocations_.add(route::AllocationTable::Range{base, size, server, ctx});
  if (!clash) return CUDA_SUCCESS;
  RGPU_ERROR("device allocation refused: its addresses overlap another server's allocation server=%zu "
             "base=0x%llx size=%llu other_server=%zu other_base=0x%llx other_size=%llu "
             "(pointers are routed by address; see docs/transport.md)",
             server, static_cast<unsigned long long>(base), static_cast<unsigned long long>(size), clash->server,
             static_cast<unsigned long long>(clash->base), static_cast<unsigned long long>(clash->size));
  return CUDA_ERROR_OUT_OF_MEMORY;
}

std::vector<std::byte> Shim::take_stage_buffer(size_t bytes) {
  std::vector<std::byte> b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stage_buffers_.empty()) {
      b = std::move(stage_buffers_.back());
      stage_buffers_.pop_back();
    }
  }
  if (b.size() < bytes) b.resize(bytes);
  return b;
}

void Shim::give_stage_buffer(std::vector<std::byte> buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_buffers_.size() < kKeptStageBuffers) stage_buffers_.push_back(std::move(buffer));
}

void Shim::add_handle(uint64_t h, HandleKind kind) {
  const uint64_t ctx = current_context();
  std::lock_guard<std::mutex> lock(mu_);
  handles_[h] = HandleInfo{kind, ctx};
}

bool Shim::remove_handle(uint64_t h, HandleKind kind) {
  if (!protocol::is_kind(h, kind)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  if (it == handles_.end() || it->second.kind != kind) return false;
  handles_.erase(it);
  handle_modes_.erase(h);
  return true;
}

void Shim::set_handle_mode(uint64_t h, uint32_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  if (handles_.count(h)) handle_modes_[h] = mode;
}

uint32_t Shim::handle_mode(uint64_t h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handle_modes_.find(h);
  return it == handle_modes_.end() ? 0 : it->second;
}

bool Shim::memo_get(const std::vector<std::byte>& key, std::vector<std::byte>* value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memo_.find(std::string(reinterpret_cast<const char*>(key.data()), key.size()));
  if (it == memo_.end()) return false;
  *value = it->second;
  return true;
}

void Shim::memo_put(std::vector<std::byte> key, std::vector<std::byte> value) {
  std::lock_guard<std::mutex> lock(mu_);
  memo_.emplace(std::string(reinterpret_cast<const char*>(key.data()), key.size()), std::move(value));
}

bool Shim::has_handle(uint64_t h, HandleKind kind) {
  if (!protocol::is_kind(h, kind)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  return it != handles_.end() && it->second.kind == kind;
}

void Shim::add_context(uint64_t h, ContextInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  contexts_[h] = info;
}

bool Shim::remove_context(uint64_t h) {
  std::lock_guard<std::mutex> lock(mu_);
  return contexts_.erase(h) > 0;
}

bool Shim::context_info(uint64_t h, ContextInfo* out) {
  if (!protocol::is_kind(h, HandleKind::kContext)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(h);
  if (it == contexts_.end()) return false;
  if (out) *out = it->second;
  return true;
}

int Shim::primary_retain(int device, unsigned* flags) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = ++primary_refs_[device];
  if (n == 1) contexts_[primary_handle(device)] = ContextInfo{device, true};
  *flags = primary_flags_[device];
  return n;
}

int Shim::primary_release(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (primary_refs_[device] == 0) return -1;
  int n = --primary_refs_[device];
  if (n == 0) contexts_.erase(primary_handle(device));
  return n;
}

int Shim::primary_reset(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  int was = primary_refs_[device];
  primary_refs_[device] = 0;
  primary_flags_[device] = 0;
  contexts_.erase(primary_handle(device));
  return was;
}

void Shim::primary_state(int device, unsigned* flags, int* active) {
  std::lock_guard<std::mutex> lock(mu_);
  *flags = primary_flags_[device];
  *active = primary_refs_[device] > 0;
}

void Shim::primary_set_flags(int device, unsigned flags) {
  std::lock_guard<std::mutex> lock(mu_);
  primary_flags_[device] = flags;
}

CUresult initialize() {
  std::call_once(g_init_once, [] {
    log::set_component("rgpu");
    std::string problem;
    std::string pool_list;
    ClientOptions options = options_from_environment(&problem, &pool_list);
    if (!problem.empty()) {
      RGPU_ERROR("cannot initialise: %s", problem.c_str());
      g_init_result = CUDA_ERROR_NO_DEVICE;
      g_phase = Phase::kFailed;
      return;
    }
    std::shared_ptr<pool::client::Held> lease;
    if (!pool_list.empty()) {
      auto held = lease_from_pool(pool_list, &options);
      if (!held.is_ok()) {
        RGPU_ERROR("cannot initialise: no devices from the pool (RGPU_POOL=%s): %s", pool_list.c_str(),
                   held.status().message().c_str());
        g_init_result = CUDA_ERROR_NO_DEVICE;
        g_phase = Phase::kFailed;
        return;
      }
      lease = std::move(held.value());
    }
    auto servers = route::parse_servers(options.server, &problem);
    if (!servers) {
      RGPU_ERROR("cannot initialise: %s", problem.c_str());
      g_init_result = CUDA_ERROR_NO_DEVICE;
      g_phase = Phase::kFailed;
      return;
    }
    // One session per server, opened now; CUDA_VISIBLE_DEVICES applies to
    // all servers' devices together, so each session takes all of its own.
    const std::optional<std::string> visible = options.visible_devices;
    options.visible_devices.reset();
    std::vector<std::unique_ptr<Client>> clients;
    for (size_t i = 0; i < servers->size(); ++i) {
      options.server = (*servers)[i];
      auto client = Client::connect(options);
      if (!client.is_ok()) {
        RGPU_ERROR("cannot initialise: server %zu of %zu (%s): %s", i + 1, servers->size(), options.server.c_str(),
                   client.status().message().c_str());
        g_init_result = client.status().kind() == ErrorKind::kDisconnected ? CUDA_ERROR_NO_DEVICE
                                                                              : CUDA_ERROR_NOT_PERMITTED;
        g_phase = Phase::kFailed;
        return;  // the sessions already open close here
      }
      clients.push_back(std::move(client.value()));
    }
    auto shim = std::make_unique<Shim>(std::move(clients), visible);
    if (lease) shim->keep(std::move(lease));
    // As a local driver: no visible device is cuInit's CUDA_ERROR_NO_DEVICE,
    // and the sessions, of no use, close at once.
    if (shim->device_count() == 0) {
      RGPU_ERROR("cannot initialise: no device is visible (CUDA_VISIBLE_DEVICES)");
      g_init_result = CUDA_ERROR_NO_DEVICE;
      g_phase = Phase::kFailed;
      return;
    }
    g_shim = shim.release();
    g_init_result = CUDA_SUCCESS;
    g_phase = Phase::kReady;
    std::atexit(shutdown_at_exit);
  });
  if (g_phase.load() == Phase::kDeinitialized) return CUDA_ERROR_DEINITIALIZED;
  return g_init_result;
}

Shim* shim_or_error(CUresult* error) {
  switch (g_phase.load(std::memory_order_acquire)) {
    case Phase::kReady: {
      Shim* s = g_shim.load(std::memory_order_acquire);
      if (s) return s;
      *error = CUDA_ERROR_DEINITIALIZED;
      return nullptr;
    }
    case Phase::kDeinitialized:
      *error = CUDA_ERROR_DEINITIALIZED;
      return nullptr;
    case Phase::kFailed:
      *error = g_init_result;
      return nullptr;
    case Phase::kNone:
    default:
      *error = CUDA_ERROR_NOT_INITIALIZED;
      return nullptr;
  }
}

std::vector<uint64_t>& context_stack() { return t_context_stack; }

uint64_t current_context() { return t_context_stack.empty() ? 0 : t_context_stack.back(); }

}  // namespace rgpu::shim
