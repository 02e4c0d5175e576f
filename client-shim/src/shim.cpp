// The client library's process state and its one-time initialisation.
#include "shim.h"

#include <cstdlib>

#include "rgpu/common/log.h"
#include "rgpu/protocol/auth.h"

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
    shim->client().flush();
    delete shim;  // closes the session; the server frees what it held
  }
}

ClientOptions options_from_environment(std::string* problem) {
  ClientOptions o;
  const char* server = std::getenv("RGPU_SERVER");
  if (!server || !*server) {
    *problem = "RGPU_SERVER is not set (host:port of rgpud); start programs with 'rgpu run'";
    return o;
  }
  o.server = server;
  if (const char* t = std::getenv("RGPU_TENANT"); t && *t) o.tenant = t;
  if (const char* file = std::getenv("RGPU_AUTH_TOKEN_FILE"); file && *file) {
    auto text = protocol::auth::read_secret_file(file);
    auto secret = text.is_ok() ? protocol::auth::clean_secret(text.value(), file) : Result<std::string>(text.status());
    if (!secret.is_ok()) {
      *problem = "RGPU_AUTH_TOKEN_FILE: " + secret.status().message();
      return o;
    }
    o.auth_token = std::move(secret.value());
  } else if (const char* t = std::getenv("RGPU_AUTH_TOKEN"); t && *t) {
    auto secret = protocol::auth::clean_secret(t, "RGPU_AUTH_TOKEN");
    if (!secret.is_ok()) {
      *problem = secret.status().message();
      return o;
    }
    o.auth_token = std::move(secret.value());
  }
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) o.visible_devices = v;
  if (const char* t = std::getenv("RGPU_CONNECT_TIMEOUT_MS")) {
    long ms = std::strtol(t, nullptr, 10);
    if (ms > 0) o.connect_timeout = std::chrono::milliseconds(ms);
  }
  return o;
}

thread_local std::vector<uint64_t> t_context_stack;

}  // namespace

Shim::Shim(std::unique_ptr<Client> client) : client_(std::move(client)) {
  primary_refs_.assign(client_->devices().size(), 0);
  primary_flags_.assign(client_->devices().size(), 0);
}

const DeviceInfo* Shim::device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count()) return nullptr;
  return &client_->devices()[ordinal];
}

void Shim::add_handle(uint64_t h, HandleKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  handles_[h] = kind;
}

bool Shim::remove_handle(uint64_t h, HandleKind kind) {
  if (!protocol::is_kind(h, kind)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  if (it == handles_.end() || it->second != kind) return false;
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
  return it != handles_.end() && it->second == kind;
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
    ClientOptions options = options_from_environment(&problem);
    if (!problem.empty()) {
      RGPU_ERROR("cannot initialise: %s", problem.c_str());
      g_init_result = CUDA_ERROR_NO_DEVICE;
      g_phase = Phase::kFailed;
      return;
    }
    auto client = Client::connect(options);
    if (!client.is_ok()) {
      RGPU_ERROR("cannot initialise: %s", client.status().message().c_str());
      g_init_result = client.status().kind() == ErrorKind::kDisconnected ? CUDA_ERROR_NO_DEVICE
                                                                            : CUDA_ERROR_NOT_PERMITTED;
      g_phase = Phase::kFailed;
      return;
    }
    // As a local driver: no visible device is cuInit's CUDA_ERROR_NO_DEVICE,
    // and the session, of no use, closes at once.
    if (client.value()->devices().empty()) {
      RGPU_ERROR("cannot initialise: no device is visible (CUDA_VISIBLE_DEVICES)");
      g_init_result = CUDA_ERROR_NO_DEVICE;
      g_phase = Phase::kFailed;
      return;
    }
    g_shim = new Shim(std::move(client.value()));
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
