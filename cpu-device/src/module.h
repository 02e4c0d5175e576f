// Module and Function: a loaded PTX program with its variables placed in
// device memory, and the kernel handles cuModuleGetFunction hands out.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cuda_api.h"
#include "program_cache.h"
#include "rgpu/cpudev/memory.h"
#include "rgpu/ptx/ptx.h"

namespace rgpu::cpudev {

// A loaded module. Its .global and .const variables live in device memory
// under an owner tag of their own (the module handle) and are freed when the
// last reference goes (the driver's table, queued launches).
// Lifetime: shared. Thread safety: immutable after load, except for the
// function cache (internally locked).
class Module {
 public:
  // Picks the PTX of `image` (fatbin, fatbin wrapper or PTX text), parses it
  // and places its variables in isolation group `group`. Errors:
  // INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX, OUT_OF_MEMORY.
  // The parsed program comes from `programs` when the same image was
  // loaded before.
  static CUresult load(const void* image, uint64_t handle, uint64_t context, int device, uint64_t group,
                       DeviceMemory* memory, ProgramCache* programs, std::shared_ptr<Module>* out);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  uint64_t handle() const { return handle_; }
  uint64_t context() const { return context_; }
  int device() const { return device_; }
  const ptx::Program& program() const { return *program_; }
  // Address of each variable, indexed like program().variables() (0: none).
  const std::vector<uint64_t>& addresses() const { return addresses_; }
  // Total bytes of .const variables.
  uint64_t const_bytes() const { return const_bytes_; }
  // Device memory its variables hold (their declared sizes).
  uint64_t memory_bytes() const { return memory_bytes_; }

 private:
  Module(uint64_t handle, uint64_t context, int device, DeviceMemory* memory)
      : handle_(handle), context_(context), device_(device), memory_(memory) {}

  const uint64_t handle_;
  const uint64_t context_;
  const int device_;
  DeviceMemory* const memory_;  // the device's; outlives every module
  std::shared_ptr<const ptx::Program> program_;  // shared with the cache and other modules
  std::vector<uint64_t> addresses_;
  uint64_t const_bytes_ = 0;
  uint64_t memory_bytes_ = 0;
};

// A kernel handle. Valid while its module is loaded.
// Lifetime: shared (driver table, API calls). Thread safety: thread-safe.
class Function {
 public:
  Function(uint64_t handle, const std::shared_ptr<Module>& module, int index);

  uint64_t handle() const { return handle_; }
  uint64_t module_handle() const { return module_handle_; }
  int index() const { return index_; }
  // Null once the module is unloaded.
  std::shared_ptr<Module> module() const { return module_.lock(); }
  // Dynamic shared memory a launch may ask for (cuFuncSetAttribute).
  int max_dynamic_shared() const { return max_dynamic_shared_.load(); }
  void set_max_dynamic_shared(int bytes) { max_dynamic_shared_.store(bytes); }
  // Empty when the interpreter can run every instruction of the kernel.
  const std::string& unsupported_reason(const Module& module);
  // Why a launch of this kernel is refused ("kernel NAME cannot run on the
  // CPU device: WHY"); empty when it can run.
  std::string launch_refusal(const Module& module);

 private:
  const uint64_t handle_;
  const uint64_t module_handle_;
  const std::weak_ptr<Module> module_;
  const int index_;
  std::atomic<int> max_dynamic_shared_;
  std::once_flag checked_;
  std::string unsupported_;
};

}  // namespace rgpu::cpudev
