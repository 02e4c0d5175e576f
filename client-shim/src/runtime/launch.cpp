// Runtime API: what nvcc's host code calls (fatbin, kernel and variable
// registration, the <<<>>> call configuration, launches) and kernel
// attributes and occupancy. A registered fatbin becomes a module on a device
// the first time one of its kernels or variables is used there.
#include <cstring>
#include <vector>

#include "../unimplemented.h"
#include "runtime.h"

using namespace rgpu::runtime;

namespace {

// nvcc's fatbin wrapper (__fatDeviceText) starts with this magic.
constexpr unsigned kFatbinWrapperMagic = 0x466243b1;

// The <<<grid, block, shared, stream>>> configurations pushed by the calling
// thread and not yet popped by the kernel's host stub.
struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared;
  void* stream;
};
thread_local std::vector<CallConfig> t_configs;

FatBinary* binary_of(void** handle) { return reinterpret_cast<FatBinary*>(handle); }

// The registered kernel behind a launch's function argument: the host stub's
// address, or a cudaKernel_t from __cudaGetKernel.
Kernel* kernel_of(const void* func) {
  if (Kernel* k = state().kernel_by_host(func)) return k;
  auto* k = static_cast<Kernel*>(const_cast<void*>(func));
  return state().is_kernel(k) ? k : nullptr;
}


// The device's limits on grid and block shape (answered locally).
bool fits_device(dim3 grid, dim3 block) {
  int device = current_device();
  auto limit = [device](CUdevice_attribute a) {
    int v = 0;
    return cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS && v > 0 ? static_cast<uint64_t>(v) : ~uint64_t{0};
  };
  return block.x <= limit(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X) && block.y <= limit(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y) &&
         block.z <= limit(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z) && grid.x <= limit(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X) &&
         grid.y <= limit(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y) && grid.z <= limit(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z) &&
         static_cast<uint64_t>(block.x) * block.y * block.z <= limit(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
}

cudaError_t launch(Kernel* k, dim3 grid, dim3 block, void** args, size_t shared, CUstream s) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (!k) return record(cudaErrorInvalidDeviceFunction);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
    return record(cudaErrorInvalidConfiguration);
  }
  CUfunction f = nullptr;
  if (cudaError_t e = state().function(k, current_device(), &f); e != cudaSuccess) return record(e);
  if (!fits_device(grid, block)) return record(cudaErrorInvalidConfiguration);
  // A block larger than the kernel allows (__launch_bounds__, registers) is
  // refused by the launch itself, as on a GPU. The attribute is fetched once.
  int max_threads = 0;
  if (cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == CUDA_SUCCESS && max_threads > 0 &&
      static_cast<uint64_t>(block.x) * block.y * block.z > static_cast<uint64_t>(max_threads)) {
    return record(cudaErrorLaunchOutOfResources);
  }
  CUresult r = cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, static_cast<unsigned>(shared), s,
                              args, nullptr);
  if (r == CUDA_ERROR_INVALID_VALUE) return record(cudaErrorInvalidConfiguration);
  return record(r);
  RT_END
}

cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args, bool per_thread) {
  RT_BEGIN
  if (!config) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  if (config->numAttrs == 0) {
    return launch(kernel_of(func), config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                  driver_stream(config->stream, per_thread));
  }
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(func, &f); e != cudaSuccess) return record(e);
  // cudaLaunchAttribute and CUlaunchAttribute share their layout and ids.
  static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));
  CUlaunchConfig c{};
  c.gridDimX = config->gridDim.x;
  c.gridDimY = config->gridDim.y;
  c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x;
  c.blockDimY = config->blockDim.y;
  c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
  c.hStream = driver_stream(config->stream, per_thread);
  c.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  c.numAttrs = config->numAttrs;
  return record(cuLaunchKernelEx(&c, f, args, nullptr));
  RT_END
}

int function_attribute(CUfunction f, CUfunction_attribute a) {
  int v = 0;
  return cuFuncGetAttribute(&v, a, f) == CUDA_SUCCESS ? v : 0;
}

cudaError_t occupancy(int* blocks, const void* func, int block_size, size_t shared, unsigned flags) {
  RT_BEGIN
  if (!blocks || block_size <= 0) return record(cudaErrorInvalidValue);
  if (flags & ~static_cast<unsigned>(cudaOccupancyDisableCachingOverride)) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(func, &f); e != cudaSuccess) return record(e);
  return record(cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block_size, shared));
  RT_END
}

}  // namespace

// ---- registration (called by nvcc's host code, before main and at exit) ----------

extern "C" {

__attribute__((visibility("default"))) void** __cudaRegisterFatBinary(void* fat_cubin) {
  try {
    if (!fat_cubin || *static_cast<const unsigned*>(fat_cubin) != kFatbinWrapperMagic) {
      // Still registered, so that the program's own bookkeeping works; its
      // kernels fail to load with cudaErrorInvalidKernelImage when used.
      rgpu::shim::report_unimplemented("__cudaRegisterFatBinary(unknown image)");
    }
    return reinterpret_cast<void**>(state().add_binary(fat_cubin));
  } catch (...) {
    return nullptr;
  }
}

__attribute__((visibility("default"))) void __cudaRegisterFatBinaryEnd(void** handle) {}

__attribute__((visibility("default"))) void __cudaUnregisterFatBinary(void** handle) {
  try {
    if (handle) state().remove_binary(binary_of(handle));
  } catch (...) {
  }
}

__attribute__((visibility("default"))) void __cudaRegisterFunction(void** handle, const char* host_fun,
                                                                   char* device_fun, const char* device_name,
                                                                   int thread_limit, uint3* tid, uint3* bid,
                                                                   dim3* bdim, dim3* gdim, int* wsize) {
  try {
    if (!handle || !host_fun || !device_name || !state().is_binary(binary_of(handle))) return;
    state().add_kernel(binary_of(handle), host_fun, device_name);
  } catch (...) {
  }
}

__attribute__((visibility("default"))) void __cudaRegisterVar(void** handle, char* host_var, char* device_address,
                                                              const char* device_name, int ext, size_t size,
                                                              int constant, int global) {
  try {
    if (!handle || !host_var || !device_name || !state().is_binary(binary_of(handle))) return;
    state().add_variable(binary_of(handle), host_var, device_name, size, constant != 0);
  } catch (...) {
  }
}

// Managed (unified) memory is not supported: the variable stays unregistered.
__attribute__((visibility("default"))) void __cudaRegisterManagedVar(void** handle, void** host_var_ptr,
                                                                     char* device_address, const char* device_name,
                                                                     int ext, size_t size, int constant,
                                                                     int global) {
  rgpu::shim::report_unimplemented("__cudaRegisterManagedVar");
}

__attribute__((visibility("default"))) char __cudaInitModule(void** handle) {
  try {
    return handle && state().is_binary(binary_of(handle)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

__attribute__((visibility("default"))) unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                                                            struct CUstream_st* stream) {
  try {
    t_configs.push_back(CallConfig{grid, block, shared, stream});
    return 0;
  } catch (...) {
    return 1;
  }
}

__attribute__((visibility("default"))) cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block,
                                                                               size_t* shared, void* stream) {
  if (t_configs.empty()) return record(cudaErrorMissingConfiguration);
  CallConfig c = t_configs.back();
  t_configs.pop_back();
  if (grid) *grid = c.grid;
  if (block) *block = c.block;
  if (shared) *shared = c.shared;
  if (stream) *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}

__attribute__((visibility("default"))) cudaError_t __cudaGetKernel(cudaKernel_t* out, const void* host_fun) {
  try {
    if (!out) return record(cudaErrorInvalidValue);
    Kernel* k = state().kernel_by_host(host_fun);
    if (!k) return record(cudaErrorInvalidDeviceFunction);
    *out = reinterpret_cast<cudaKernel_t>(k);
    return cudaSuccess;
  } catch (...) {
    return record(cudaErrorUnknown);
  }
}

__attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                                       void** args, size_t shared,
                                                                       cudaStream_t stream) {
  Kernel* k = reinterpret_cast<Kernel*>(kernel);
  if (!state().is_kernel(k)) return record(cudaErrorInvalidDeviceFunction);
  return launch(k, grid, block, args, shared, driver_stream(stream, false));
}

__attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid,
                                                                            dim3 block, void** args, size_t shared,
                                                                            cudaStream_t stream) {
  Kernel* k = reinterpret_cast<Kernel*>(kernel);
  if (!state().is_kernel(k)) return record(cudaErrorInvalidDeviceFunction);
  return launch(k, grid, block, args, shared, driver_stream(stream, true));
}

}  // extern "C"

// ---- launches -----------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                            cudaStream_t stream) {
  return launch(kernel_of(func), grid, block, args, shared, driver_stream(stream, false));
}
RGPU_RT_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                                 size_t shared, cudaStream_t stream) {
  return launch(kernel_of(func), grid, block, args, shared, driver_stream(stream, true));
}
RGPU_RT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launch_ex(config, func, args, false);
}
RGPU_RT_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                                    void** args) {
  return launch_ex(config, func, args, true);
}

// ---- kernel attributes and occupancy ----------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  RT_BEGIN
  if (!attr) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(func, &f); e != cudaSuccess) return record(e);
  std::memset(attr, 0, sizeof(*attr));
  attr->sharedSizeBytes = function_attribute(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  attr->constSizeBytes = function_attribute(f, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  attr->localSizeBytes = function_attribute(f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  attr->maxThreadsPerBlock = function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  attr->numRegs = function_attribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS);
  attr->ptxVersion = function_attribute(f, CU_FUNC_ATTRIBUTE_PTX_VERSION);
  attr->binaryVersion = function_attribute(f, CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  attr->cacheModeCA = function_attribute(f, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA);
  attr->maxDynamicSharedSizeBytes = function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  attr->preferredShmemCarveout = function_attribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(func, &f); e != cudaSuccess) return record(e);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      return record(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value));
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return record(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, value));
    default:
      return record(cudaErrorNotSupported);
  }
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache config) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(func, &f); e != cudaSuccess) return record(e);
  return cudaSuccess;  // a cache preference is a hint; results never depend on it
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                                         int block_size, size_t shared) {
  return occupancy(blocks, func, block_size, shared, 0);
}
RGPU_RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                                  int block_size, size_t shared,
                                                                                  unsigned int flags) {
  return occupancy(blocks, func, block_size, shared, flags);
}

cudaError_t rgpu::runtime::function_of(const void* func, CUfunction* f) {
  Kernel* k = kernel_of(func);
  if (!k) return cudaErrorInvalidDeviceFunction;
  return state().function(k, current_device(), f);
}
