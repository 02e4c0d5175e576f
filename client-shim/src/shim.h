// The client library's process state: one lazily created session with rgpud,
// client-minted handles and each thread's context stack.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "client.h"
#include "modules.h"
#include "rgpu/protocol/handles.h"

namespace rgpu::shim {

using protocol::HandleKind;

struct ContextInfo {
  int device = 0;
  bool primary = false;
};

// Process-wide state behind the exported API. Created once by cuInit (the
// library's only lazy initialisation) and torn down at exit, after which every
// call answers CUDA_ERROR_DEINITIALIZED. Thread-safe.
class Shim {
 public:
  explicit Shim(std::unique_ptr<Client> client);

  Client& client() { return *client_; }
  ModuleRegistry& modules() { return modules_; }
  int device_count() const { return static_cast<int>(client_->devices().size()); }
  const DeviceInfo* device(int ordinal) const;

  // Handles are typed (rgpu/protocol/handles.h): the kind in the top byte,
  // a serial minted here below it. They are what the program gets back as
  // its CUstream, CUevent, CUcontext, CUmodule, CUfunction, ... values; the
  // server maps them per session.
  uint64_t mint_handle(HandleKind kind) { return protocol::make_handle(kind, next_serial_.fetch_add(1)); }
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
  int server_ordinal(int ordinal) const { return client_->devices()[static_cast<size_t>(ordinal)].server_ordinal; }
  // Contexts. Primary contexts have fixed handles, one per device, spelled
  // with the server's ordinal. `device` must be valid.
  uint64_t primary_handle(int device) const {
    return protocol::primary_context(static_cast<uint64_t>(server_ordinal(device)));
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
  std::unique_ptr<Client> client_;
  ModuleRegistry modules_;
  std::atomic<uint64_t> next_serial_{protocol::kFirstMintedSerial};
  std::mutex mu_;
  std::unordered_map<uint64_t, HandleKind> handles_;
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

// The calling thread's current context handle (0: none), and its stack.
uint64_t current_context();
std::vector<uint64_t>& context_stack();

}  // namespace rgpu::shim
