// The CUDA runtime API inside the client library: its process state (the
// registered fatbins, kernels and variables, the primary context each device
// uses, allocations made through the runtime) and the helpers every runtime
// entry point shares (error recording, the calling thread's context).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#define RGPU_RT_EXPORT extern "C" __attribute__((visibility("default")))

// No exception crosses the C boundary; a runtime entry point's body runs
// between these and maps any exception to cudaErrorUnknown (recorded).
#define RT_BEGIN try {
#define RT_END                                                  \
  }                                                             \
  catch (...) {                                                 \
    return ::rgpu::runtime::record(cudaErrorUnknown);           \
  }

// Make sure the calling thread has the runtime's context (initialising the
// runtime and retaining the device's primary context on first use); return
// the recorded error otherwise.
#define RT_CONTEXT_OR_RETURN()                                               \
  if (cudaError_t rt_ctx_err_ = ::rgpu::runtime::ensure_context(); rt_ctx_err_ != cudaSuccess) \
    return ::rgpu::runtime::record(rt_ctx_err_);

namespace rgpu::runtime {

// One device variable registered by __cudaRegisterVar: the host shadow's
// address names it in cudaMemcpyToSymbol and friends.
struct Variable {
  std::string name;
  size_t size = 0;
  bool constant = false;
};

struct FatBinary;
class MemPools;

// One kernel registered by __cudaRegisterFunction. Its address is the
// cudaKernel_t handed out by __cudaGetKernel.
struct Kernel {
  FatBinary* binary = nullptr;  // the binary that registered it; outlives the kernel entry
  const void* host_function = nullptr;
  std::string name;
  // Loaded function per device (index: device ordinal; null until first use).
  std::vector<CUfunction> functions;
};

// One fatbin registered by __cudaRegisterFatBinary. Its address is the handle
// (void**) the program's host stub keeps; `wrapper` is nvcc's fatbin wrapper,
// which cuModuleLoadData accepts as it is.
struct FatBinary {
  const void* wrapper = nullptr;
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::map<const void*, Variable> variables;  // by host shadow address
  std::vector<CUmodule> modules;              // per device; null until first use
};

// Process-wide state of the runtime API. Registration runs before main (the
// program's static constructors) and unregistration during exit, before and
// after the driver session exists, so this state is separate from the
// driver's and created on first registration or use. Thread-safe.
class Runtime {
 public:
  // Registration (from nvcc's host stubs).
  FatBinary* add_binary(const void* wrapper);
  void remove_binary(FatBinary* binary);
  void add_kernel(FatBinary* binary, const void* host_function, const char* name);
  void add_variable(FatBinary* binary, const void* host_var, const char* name, size_t size, bool constant);
  bool is_binary(const FatBinary* binary);

  // The kernel registered for a host function (stub address), or null.
  Kernel* kernel_by_host(const void* host_function);
  // True when `k` is a registered kernel handle.
  bool is_kernel(const Kernel* k);
  // The loaded driver function of `k` on `device`, loading its module first.
  cudaError_t function(Kernel* k, int device, CUfunction* out);
  // The device address and size of a registered variable on `device`.
  cudaError_t variable(const void* host_var, int device, CUdeviceptr* ptr, size_t* size);
  // Forgets the modules loaded on `device` (its primary context was reset).
  void forget_device(int device);

  // The primary context of `device`, retained once for the runtime on first
  // use (the retain is given back by cudaDeviceReset, through drop_primary).
  cudaError_t primary(int device, CUcontext* out);
  bool primary_held(int device);
  void drop_primary(int device);

  // Allocations made through the runtime, for cudaMemcpyDefault and
  // cudaPointerGetAttributes: device memory and page-locked host memory.
  void add_device_range(uint64_t base, size_t size, int device);
  bool remove_device_range(uint64_t base);
  bool find_device_range(uint64_t ptr, uint64_t* base, int* device);
  void add_host_range(const void* base, size_t size, unsigned flags, bool registered);
  // Removes and reports whether it was registered (cudaHostRegister) rather than allocated.
  bool remove_host_range(const void* base, bool* registered);
  bool find_host_range(const void* ptr, const void** base, unsigned* flags);

  // The sticky error (a fault that poisons the context until reset).
  cudaError_t sticky();
  void set_sticky(cudaError_t e);
  void clear_sticky();

  // Per-device flags set by cudaSetDeviceFlags.
  unsigned device_flags(int device);
  void set_device_flags(int device, unsigned flags);

  // Priorities of the streams the runtime created (cudaStreamGetPriority):
  // the driver keeps them on the server and rgpu's driver does not fetch them.
  void set_stream_priority(cudaStream_t s, int priority);
  // The stream's priority, or false for a stream the runtime did not create.
  bool stream_priority(cudaStream_t s, int* priority);
  void forget_stream(cudaStream_t s);

  // Stream-ordered allocations and the default memory pools (mempool.cpp).
  MemPools& pools();

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<FatBinary>> binaries_;
  std::map<const void*, Kernel*> by_host_;
  std::unordered_set<const Kernel*> kernels_;  // live kernel handles, for launch-time checks
  std::map<const void*, FatBinary*> variable_owner_;
  std::vector<CUcontext> primary_;
  std::vector<unsigned> device_flags_;
  struct DeviceRange {
    size_t size;
    int device;
  };
  std::map<uint64_t, DeviceRange> device_ranges_;
  struct HostRange {
    size_t size;
    unsigned flags;
    bool registered;
  };
  std::map<const void*, HostRange> host_ranges_;
  std::map<cudaStream_t, int> stream_priorities_;
  std::unique_ptr<MemPools> pools_;  // created on first use
  cudaError_t sticky_ = cudaSuccess;
};

// The runtime's state, created on first use and kept until the process ends
// (registration and unregistration run in static constructors and exit
// handlers of the program, around the driver session's lifetime).
Runtime& state();

// cudaError_t for a CUresult.
cudaError_t to_cuda_error(CUresult r);
// Records a result as the calling thread's last error (success records
// nothing; a sticky fault is kept for the process) and returns it.
cudaError_t record(cudaError_t e);
inline cudaError_t record(CUresult r) { return record(to_cuda_error(r)); }
// cudaGetLastError (clear) and cudaPeekAtLastError: the calling thread's last
// error, or the process's sticky fault, which no call clears.
cudaError_t take_last_error(bool clear);

// cudaSuccess when `device` is a device of the session (cudaErrorNoDevice,
// cudaErrorInvalidDevice or the driver's error otherwise).
cudaError_t check_device(int device);

// Refuses a runtime function rgpu does not provide: logs its name once and
// records and returns cudaErrorNotSupported.
cudaError_t refuse(const char* name);

// A stream's capture state, from the driver (capture.cpp); the outputs other
// than the status are written only while it captures. Before the runtime has
// a device nothing captures.
CUresult capture_info(cudaStream_t s, bool per_thread, cudaStreamCaptureStatus* status, unsigned long long* id,
                      cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                      size_t* count);
cudaError_t capture_status(cudaStream_t s, cudaStreamCaptureStatus* status);

// Initialises the driver session and makes the calling thread's device's
// primary context current (as cudart does on a thread's first runtime call).
cudaError_t ensure_context();
// The calling thread's device (cudaSetDevice; 0 by default).
int current_device();
void set_current_device(int device);
// Retains `device`'s primary context for the runtime (once) and makes it current.
cudaError_t activate_device(int device);

// A 3-D copy between linear memories (no arrays: cudaErrorNotSupported)
// queued on driver stream `s`, slice by slice and row by row (graph_nodes.cpp).
cudaError_t copy_3d_async(const cudaMemcpy3DParms& p, CUstream s);
// The device address of `count` bytes at `offset` in a registered variable.
cudaError_t symbol_address(const void* symbol, size_t count, size_t offset, void** ptr);
// The driver function of a kernel named by its host stub (or handle) on the
// calling thread's device (launch.cpp).
cudaError_t function_of(const void* func, CUfunction* f);

// Graphs built node by node: the client's own (graph_nodes.cpp), told from
// captured ones (rgpud's) by their handle's kind.
bool is_explicit_graph(cudaGraph_t g);
bool is_explicit_exec(cudaGraphExec_t e);
cudaError_t explicit_graph_create(cudaGraph_t* graph);
cudaError_t explicit_graph_destroy(cudaGraph_t graph);
cudaError_t explicit_graph_nodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t explicit_instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t explicit_exec_destroy(cudaGraphExec_t exec);
cudaError_t explicit_launch(cudaGraphExec_t exec, CUstream s);

// A runtime stream argument as the driver takes it: 0 is the legacy default
// stream, or the per-thread one for the _ptsz/_ptds variants.
inline CUstream driver_stream(cudaStream_t s, bool per_thread) {
  if (s == nullptr && per_thread) return CU_STREAM_PER_THREAD;
  return reinterpret_cast<CUstream>(s);
}

}  // namespace rgpu::runtime
