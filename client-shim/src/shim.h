// The client library's process state: one lazily created session with each
// rgpud of RGPU_SERVER, the device router over them, client-minted handles
// and each thread's context stack.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "client.h"
#include "modules.h"
#include "route.h"
#include "rgpu/protocol/handles.h"

namespace rgpu::shim {

using protocol::HandleKind;

struct ContextInfo {
  int device = 0;
  bool primary = false;
};

// The calling thread's current context handle (0: none).
uint64_t current_context();

// Where a call goes: the session (Client) of the server that owns what the
// call names, and the context to send with it (the caller's current one
// when it is on that server, else one of that server's).
struct Route {
  Client* client = nullptr;
  uint64_t ctx = 0;
  size_t server = 0;
};

// Process-wide state behind the exported API. Created once by cuInit (the
// library's only lazy initialisation) and torn down at exit, after which every
// call answers CUDA_ERROR_DEINITIALIZED. Thread-safe.
//
// The device router (docs/transport.md, "Several servers"): one Client per
// server of RGPU_SERVER, in its order; the program's devices are each
// server's devices in turn, then CUDA_VISIBLE_DEVICES selects among all of
// them. Every call goes to the server that owns what it names: a device by
// its ordinal, a handle by its tag (route.h), a device pointer by the
// allocation table, anything else by the calling thread's current context.
class Shim {
 public:
  // `clients` in RGPU_SERVER's order (at least one); `visible` is
  // CUDA_VISIBLE_DEVICES as the environment has it.
  Shim(std::vector<std::unique_ptr<Client>> clients, const std::optional<std::string>& visible);

  // The session of the current context's server (the only one with one server).
  Client& client() { return servers_ == 1 ? *clients_[0] : client_for(protocol::server_of(current_context())); }
  Client& client_for(size_t server) { return servers_ == 1 ? *clients_[0] : *clients_[server < servers_ ? server : 0]; }
  size_t servers() const { return servers_; }
  // Keeps `held` (the pool's lease, RGPU_POOL) for as long as the sessions.
  void keep(std::shared_ptr<void> held) { kept_ = std::move(held); }
  // Page-locked host memory is registered with the first server's session;
  // copies to the others still read it, without the zero-copy path.
  HostMemory& host_memory() { return clients_[0]->host_memory(); }
  // Sends every server's queued async calls.
  void flush_all();

  ModuleRegistry& modules() { return modules_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  const DeviceInfo* device(int ordinal) const;
  // The server of the program's device `ordinal` (which must be valid).
  size_t server_of_device(int ordinal) const { return device_server_[static_cast<size_t>(ordinal)]; }

  // Routes. `ctx` is the caller's current context (0: none).
  Route route_current(uint64_t ctx) {
    const size_t s = protocol::server_of(ctx);
    return Route{&client_for(s), ctx, s};
  }
  // By a handle the program passed (stream, event, module, function, library
  // handle, context); a special stream (NULL, legacy, per-thread) or 0 goes
  // by `ctx`.
  Route route_handle(uint64_t h, uint64_t ctx);
  // By a device pointer: the server whose allocation holds it, with the
  // context it was allocated in; a pointer in no known allocation goes by
  // `ctx`.
  Route route_pointer(uint64_t p, uint64_t ctx);
  // By the program's device `ordinal` (valid); ctx is 0.
  Route route_device(int ordinal) {
    const size_t s = server_of_device(ordinal);
    return Route{&client_for(s), 0, s};
  }

  // Device allocations, tracked only with several servers. Returns
  // CUDA_ERROR_OUT_OF_MEMORY (logged) when [base, base + size) overlaps an
  // allocation of another server: the caller frees it and fails.
  CUresult track_allocation(size_t server, uint64_t base, uint64_t size, uint64_t ctx);
  void untrack_allocation(uint64_t base) {
    if (servers_ > 1) allocations_.remove(base);
  }
  // Host buffers of kStagePiece bytes for copies staged through the client
  // (peer_copy.h), kept between copies: a fresh buffer's first touch costs
  // as much as a large part of the copy. At most kKeptStageBuffers stay.
  std::vector<std::byte> take_stage_buffer(size_t bytes);
  void give_stage_buffer(std::vector<std::byte> buffer);
  static constexpr size_t kKeptStageBuffers = 1;

  // Whether `p` is inside a tracked allocation (never, with one server).
  bool tracked(uint64_t p) const { return servers_ > 1 && allocations_.find(p).has_value(); }

  // Handles are typed (rgpu/protocol/handles.h): the kind in the top byte,
  // a serial minted here below it, tagged with the server that holds the
  // object (route.h). They are what the program gets back as its CUstream,
  // CUevent, CUcontext, CUmodule, CUfunction, ... values; the server maps
  // them per session. Without a server: the current context's.
  uint64_t mint_handle(HandleKind kind) { return mint_handle(kind, protocol::server_of(current_context())); }
  uint64_t mint_handle(HandleKind kind, size_t server) {
    return protocol::with_server(protocol::make_handle(kind, next_serial_.fetch_add(1)), server);
  }
  // Records a live handle, created in the calling thread's current context.
  void add_handle(uint64_t h, HandleKind kind);
  // Removes a live handle; false when it is not one of `kind`.
  bool remove_handle(uint64_t h, HandleKind kind);
  bool has_handle(uint64_t h, HandleKind kind);
  // A library handle's pointer mode (cuBLAS: 0 host, 1 device), as the
  // program last set it; 0 for a handle never set. The generated entry
  // points read it to pack a scalar= argument by value or by address.
  void set_handle_mode(uint64_t h, uint32_t mode);
  uint32_t handle_mode(uint64_t h);
  // Replies of library queries whose answer depends only on their arguments
  // (cuDNN's batch norm sizes, its version), kept for the life of the
  // process so that a training step asks each distinct question once.
  bool memo_get(const std::vector<std::byte>& key, std::vector<std::byte>* value);
  void memo_put(std::vector<std::byte> key, std::vector<std::byte> value);

  // The server's ordinal of the program's device `ordinal` (which must be
  // valid): what every call that names a device sends.
  int server_ordinal(int ordinal) const { return devices_[static_cast<size_t>(ordinal)].server_ordinal; }
  // Contexts. Primary contexts have fixed handles, one per device, spelled
  // with the server's ordinal. `device` must be valid.
  uint64_t primary_handle(int device) const {
    return route::primary_context(server_of_device(device), server_ordinal(device));
  }
  void add_context(uint64_t h, ContextInfo info);
  bool remove_context(uint64_t h);
  bool context_info(uint64_t h, ContextInfo* out);
  // Primary context reference counting; returns the count after the change.
  int primary_retain(int device, unsigned* flags);
  int primary_release(int device);
  void primary_state(int device, unsigned* flags, int* active);
  void primary_set_flags(int device, unsigned flags);
  int primary_reset(int device);

 private:
  std::shared_ptr<void> kept_;
  struct HandleInfo {
    HandleKind kind;
    uint64_t ctx;  // current when it was made
  };
  // A context of `server` for a call routed there from another server's
  // context: the primary context of its first device.
  uint64_t some_context(size_t server) const;

  std::vector<std::unique_ptr<Client>> clients_;
  size_t servers_ = 0;
  std::vector<DeviceInfo> devices_;     // the program's, in its order
  std::vector<size_t> device_server_;   // per program device: its server
  route::AllocationTable allocations_;  // with several servers only
  ModuleRegistry modules_;
  std::atomic<uint64_t> next_serial_{protocol::kFirstMintedSerial};
  std::mutex mu_;
  std::unordered_map<uint64_t, HandleInfo> handles_;
  std::vector<std::vector<std::byte>> stage_buffers_;  // mu_
  std::unordered_map<uint64_t, uint32_t> handle_modes_;  // only handles whose mode was set
  std::unordered_map<std::string, std::vector<std::byte>> memo_;  // key: the question's bytes
  std::unordered_map<uint64_t, ContextInfo> contexts_;
  std::vector<int> primary_refs_;
  std::vector<unsigned> primary_flags_;
};

// The state, or null with *error set (not initialised, failed, deinitialised).
Shim* shim_or_error(CUresult* error);
// cuInit's work: connects on first call; later calls return the first result.
CUresult initialize();

// The calling thread's context stack.
std::vector<uint64_t>& context_stack();

}  // namespace rgpu::shim
