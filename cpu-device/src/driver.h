// Driver: the devices of the CPU device library and the tables that map API
// handles (contexts, streams, events) to objects.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "activity.h"
#include "config.h"
#include "context.h"
#include "event.h"
#include "graph.h"
#include "kernel_pool.h"
#include "module.h"
#include "program_cache.h"
#include "rgpu/cpudev/memory.h"
#include "scheduler.h"
#include "stream.h"

namespace rgpu::cpudev {

// One CPU device. Its memory lives as long as the driver.
struct Device {
  int ordinal = 0;
  std::string name;
  unsigned char uuid[16] = {};
  std::unique_ptr<DeviceMemory> memory;
  // Primary context: a fixed handle, a reference count and flags.
  uint64_t primary_handle = 0;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  // Kernel workers, started by the first launch.
  std::once_flag pool_once;
  std::unique_ptr<KernelPool> pool;
  // Time during which kernels, and copies or memsets, ran on this device
  // (rgpuDeviceGetUtilization).
  ActivityClock kernels;
  ActivityClock copies;
  // Fair sharing among the contexts given a compute share (rgpuCtxSetComputeShare).
  const std::shared_ptr<FairShare> fair = std::make_shared<FairShare>(&FairShare::steady_now);
};

// Everything cuInit creates. Handles are never reused, so a stale handle is
// simply not found.
// Lifetime: one per loaded library, from cuInit until the library unloads;
// the destructor shuts every context down. Thread safety: all methods are
// thread-safe.
class Driver {
 public:
  static Result<std::unique_ptr<Driver>> create(const Config& config);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const Config& config() const { return config_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  // Null for an invalid ordinal. Devices live as long as the driver.
  Device* device(int ordinal);
  // The device whose reserved range holds addr, or null.
  Device* device_of(uint64_t addr);

  uint64_t new_handle() { return next_handle_.fetch_add(0x10); }

  // Contexts. Lookups return only live contexts.
  std::shared_ptr<Context> create_context(int device, unsigned flags);
  std::shared_ptr<Context> context(uint64_t handle);
  // The live contexts of a device.
  std::vector<std::shared_ptr<Context>> contexts_of(int device);
  // Destroys a (non-primary) context and everything it owns.
  CUresult destroy_context(uint64_t handle);
  CUresult primary_retain(int device, uint64_t* handle);
  CUresult primary_release(int device);
  CUresult primary_reset(int device);
  CUresult primary_set_flags(int device, unsigned flags);
  CUresult primary_state(int device, unsigned* flags, int* active);

  // Streams and events, registered under new handles.
  std::shared_ptr<Stream> create_stream(const std::shared_ptr<Context>& ctx, unsigned flags, int priority);
  std::shared_ptr<Stream> stream(uint64_t handle);
  CUresult destroy_stream(uint64_t handle);
  std::shared_ptr<Event> create_event(const std::shared_ptr<Context>& ctx, unsigned flags);
  std::shared_ptr<Event> event(uint64_t handle);
  CUresult destroy_event(uint64_t handle);

  // Modules and their functions. Unloading a module invalidates its
  // functions; work already queued keeps the module alive until it ran.
  CUresult load_module(const std::shared_ptr<Context>& ctx, const void* image, std::shared_ptr<Module>* out);
  std::shared_ptr<Module> module(uint64_t handle);
  CUresult unload_module(uint64_t handle);
  // The handle for kernel `index` of `module` (the same one on every call).
  std::shared_ptr<Function> function_of(const std::shared_ptr<Module>& module, int index);
  std::shared_ptr<Function> function(uint64_t handle);

  // The kernel worker pool of a device, started on first use.
  KernelPool* pool(int device);
  // Parsed programs, shared by every module load of this driver.
  ProgramCache& programs() { return programs_; }
  // Graphs, executable graphs and captures in progress.
  GraphTables& graphs() { return graphs_; }

 private:
  explicit Driver(const Config& config)
      : config_(config),
        programs_(config.program_cache_bytes),
        scheduler_(std::make_unique<Scheduler>(static_cast<unsigned>(config.stream_workers))) {}
  // Removes a context and its handles from the tables and frees its
  // resources; `ctx` must already be out of contexts_.
  void teardown(const std::shared_ptr<Context>& ctx);
  std::shared_ptr<Context> unregister_locked(uint64_t handle);

  const Config config_;
  ProgramCache programs_;
  // Runs every stream; declared first so that it goes last.
  const std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::atomic<uint64_t> next_handle_{0x7f0000001000ull};
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Context>> contexts_;
  std::map<uint64_t, std::shared_ptr<Stream>> streams_;
  std::map<uint64_t, std::shared_ptr<Event>> events_;
  std::map<uint64_t, std::shared_ptr<Module>> modules_;
  std::map<uint64_t, std::shared_ptr<Function>> functions_;
  GraphTables graphs_;
};

}  // namespace rgpu::cpudev
