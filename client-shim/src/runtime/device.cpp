// Runtime API: versions, errors, devices, limits and driver entry points.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "runtime.h"

using namespace rgpu::runtime;

namespace {

// One cudaError_t value. Immutable static data; any thread.
struct ErrorInfo {
  int value;
  const char* name;
  const char* description;
};

constexpr ErrorInfo kErrors[] = {
#include "../../generated/runtime_errors.inc"
};

static_assert(std::is_sorted(std::begin(kErrors), std::end(kErrors),
                             [](const ErrorInfo& a, const ErrorInfo& b) { return a.value < b.value; }));
static_assert(static_cast<int>(cudaErrorNotSupported) == 801);

const ErrorInfo* find_error(cudaError_t value) {
  auto it = std::lower_bound(std::begin(kErrors), std::end(kErrors), static_cast<int>(value),
                             [](const ErrorInfo& e, int v) { return e.value < v; });
  return it != std::end(kErrors) && it->value == static_cast<int>(value) ? it : nullptr;
}

int attr(int device, CUdevice_attribute a) {
  int v = 0;
  return cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS ? v : 0;
}

void fill_properties(cudaDeviceProp* p, int d) {
  std::memset(p, 0, sizeof(*p));
  cuDeviceGetName(p->name, sizeof(p->name), d);
  CUuuid uuid{};
  if (cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS) std::memcpy(&p->uuid, &uuid, sizeof(uuid));
  size_t total = 0;
  cuDeviceTotalMem(&total, d);
  p->totalGlobalMem = total;
  auto a = [d](CUdevice_attribute at) { return attr(d, at); };
  p->sharedMemPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  p->regsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  p->warpSize = a(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p->memPitch = a(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  p->maxThreadsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p->maxThreadsDim[0] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  p->maxThreadsDim[1] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  p->maxThreadsDim[2] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  p->maxGridSize[0] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  p->maxGridSize[1] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  p->maxGridSize[2] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  p->totalConstMem = a(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  p->major = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p->minor = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p->textureAlignment = a(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  p->texturePitchAlignment = a(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
  p->multiProcessorCount = a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->integrated = a(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  p->canMapHostMemory = a(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  p->maxTexture1D = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH);
  p->maxTexture2D[0] = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH);
  p->maxTexture2D[1] = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT);
  p->maxTexture3D[0] = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH);
  p->maxTexture3D[1] = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT);
  p->maxTexture3D[2] = a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH);
  p->surfaceAlignment = a(CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT);
  p->concurrentKernels = a(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  p->ECCEnabled = a(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  p->pciBusID = a(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  p->pciDeviceID = a(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p->pciDomainID = a(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  p->tccDriver = a(CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
  p->asyncEngineCount = a(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  p->unifiedAddressing = a(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  p->memoryBusWidth = a(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  p->l2CacheSize = a(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  p->persistingL2CacheMaxSize = a(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
  p->maxThreadsPerMultiProcessor = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p->streamPrioritiesSupported = a(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  p->globalL1CacheSupported = a(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
  p->localL1CacheSupported = a(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
  p->sharedMemPerMultiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p->regsPerMultiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p->managedMemory = a(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  p->isMultiGpuBoard = a(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
  p->multiGpuBoardGroupID = a(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID);
  p->hostNativeAtomicSupported = a(CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED);
  p->pageableMemoryAccess = a(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  p->concurrentManagedAccess = a(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  p->computePreemptionSupported = a(CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED);
  p->canUseHostPointerForRegisteredMem = a(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
  p->cooperativeLaunch = a(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  p->sharedMemPerBlockOptin = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  p->pageableMemoryAccessUsesHostPageTables = a(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  p->directManagedMemAccessFromHost = a(CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  p->maxBlocksPerMultiProcessor = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p->accessPolicyMaxWindowSize = a(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
  p->reservedSharedMemPerBlock = a(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  p->hostRegisterSupported = a(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
  p->sparseCudaArraySupported = a(CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED);
  p->hostRegisterReadOnlySupported = a(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED);
  p->timelineSemaphoreInteropSupported = a(CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED);
  p->memoryPoolsSupported = a(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  p->gpuDirectRDMASupported = a(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
  p->gpuDirectRDMAFlushWritesOptions = a(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS);
  p->gpuDirectRDMAWritesOrdering = a(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING);
  p->memoryPoolSupportedHandleTypes = a(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES);
  p->deferredMappingCudaArraySupported = a(CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED);
  p->ipcEventSupported = a(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
  p->clusterLaunch = a(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH);
  p->unifiedFunctionPointers = a(CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS);
  p->deviceNumaConfig = a(CU_DEVICE_ATTRIBUTE_NUMA_CONFIG);
  p->deviceNumaId = a(CU_DEVICE_ATTRIBUTE_NUMA_ID);
  p->mpsEnabled = a(CU_DEVICE_ATTRIBUTE_MPS_ENABLED);
  p->hostNumaId = a(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID);
}

// cuGetProcAddress_v2 with the runtime's flag names (same values).
cudaError_t entry_point(const char* symbol, void** fn, int version, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* status, bool per_thread) {
  if (!fn || !symbol) return record(cudaErrorInvalidValue);
  if (per_thread && flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
  CUdriverProcAddressQueryResult s = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = cuGetProcAddress_v2(symbol, fn, version, flags, &s);
  if (status) *status = static_cast<cudaDriverEntryPointQueryResult>(s);
  if (r == CUDA_ERROR_NOT_FOUND) return status ? cudaSuccess : record(cudaErrorSymbolNotFound);
  return record(r);
}

}  // namespace

// ---- versions and errors -------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return record(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

RGPU_RT_EXPORT cudaError_t cudaDriverGetVersion(int* version) {
  if (!version) return record(cudaErrorInvalidValue);
  return record(cuDriverGetVersion(version));
}

RGPU_RT_EXPORT cudaError_t cudaGetLastError() { return take_last_error(true); }

// The profiler runs on the server's side or not at all; a program that
// brackets a region with these keeps working.
RGPU_RT_EXPORT cudaError_t cudaProfilerStart() { return cudaSuccess; }
RGPU_RT_EXPORT cudaError_t cudaProfilerStop() { return cudaSuccess; }
RGPU_RT_EXPORT cudaError_t cudaPeekAtLastError() { return take_last_error(false); }

RGPU_RT_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  const ErrorInfo* e = find_error(error);
  return e ? e->name : "unrecognized error code";
}

RGPU_RT_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  const ErrorInfo* e = find_error(error);
  return e ? e->description : "unrecognized error code";
}

RGPU_RT_EXPORT struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                                  enum cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

// ---- devices ------------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  RT_BEGIN
  if (!count) return record(cudaErrorInvalidValue);
  *count = 0;
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) return record(r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : to_cuda_error(r));
  r = cuDeviceGetCount(count);
  if (r == CUDA_SUCCESS && *count == 0) return record(cudaErrorNoDevice);
  return record(r);
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaSetDevice(int device) {
  RT_BEGIN
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  set_current_device(device);
  return record(activate_device(device));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaInitDevice(int device, unsigned int device_flags, unsigned int flags) {
  RT_BEGIN
  if (flags != 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  if (device_flags) state().set_device_flags(device, device_flags);
  CUcontext c = nullptr;
  return record(state().primary(device, &c));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGetDevice(int* device) {
  RT_BEGIN
  if (!device) return record(cudaErrorInvalidValue);
  CUcontext cur = nullptr;
  CUdevice d = 0;
  if (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur && cuCtxGetDevice(&d) == CUDA_SUCCESS) {
    *device = d;
    return cudaSuccess;
  }
  *device = current_device();
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  RT_BEGIN
  constexpr unsigned kKnown = cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax |
                              cudaDeviceSyncMemops;
  if (flags & ~kKnown) return record(cudaErrorInvalidValue);
  int device = current_device();
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  unsigned ctx_flags = flags & ~(cudaDeviceMapHost | cudaDeviceSyncMemops);  // always on here
  state().set_device_flags(device, ctx_flags);
  if (state().primary_held(device)) cuDevicePrimaryCtxSetFlags(device, ctx_flags);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  RT_BEGIN
  if (!flags) return record(cudaErrorInvalidValue);
  *flags = state().device_flags(current_device()) | cudaDeviceMapHost;
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  RT_BEGIN
  if (!prop) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  fill_properties(prop, device);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  RT_BEGIN
  if (!value) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  // cudaDeviceAttr and CUdevice_attribute share their values.
  return record(cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  // Priorities are passed through to the server's device, whose range rgpu
  // does not fetch; this is the range NVIDIA GPUs report.
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceSynchronize() {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuCtxSynchronize());
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceReset() {
  RT_BEGIN
  int device = current_device();
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  if (state().primary_held(device)) {
    CUresult r = cuDevicePrimaryCtxReset(device);
    state().drop_primary(device);
    state().forget_device(device);
    state().clear_sticky();
    return record(r);
  }
  state().clear_sticky();
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceGetLimit(size_t* value, enum cudaLimit limit) {
  RT_BEGIN
  if (!value) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  // Limits rgpu does not remote keep the values a CUDA 13 GPU starts with.
  switch (limit) {
    case cudaLimitStackSize: *value = 1024; return cudaSuccess;
    case cudaLimitPrintfFifoSize: *value = 1 << 20; return cudaSuccess;
    case cudaLimitMallocHeapSize: *value = 8 << 20; return cudaSuccess;
    case cudaLimitDevRuntimeSyncDepth: *value = 2; return cudaSuccess;
    case cudaLimitDevRuntimePendingLaunchCount: *value = 2048; return cudaSuccess;
    case cudaLimitMaxL2FetchGranularity: *value = 64; return cudaSuccess;
    case cudaLimitPersistingL2CacheSize: *value = 0; return cudaSuccess;
    default: return record(cudaErrorUnsupportedLimit);
  }
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  switch (limit) {
    case cudaLimitStackSize:
    case cudaLimitPrintfFifoSize:
    case cudaLimitMallocHeapSize:
    case cudaLimitDevRuntimeSyncDepth:
    case cudaLimitDevRuntimePendingLaunchCount:
    case cudaLimitMaxL2FetchGranularity:
    case cudaLimitPersistingL2CacheSize:
      return cudaSuccess;  // accepted; the server's defaults stay (see docs/compatibility.md)
    default:
      return record(cudaErrorUnsupportedLimit);
  }
  RT_END
}

// ---- driver entry points -------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                                   cudaDriverEntryPointQueryResult* status) {
  RT_BEGIN
  return entry_point(symbol, fn, CUDART_VERSION, flags, status, false);
  RT_END
}
RGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                                        cudaDriverEntryPointQueryResult* status) {
  RT_BEGIN
  return entry_point(symbol, fn, CUDART_VERSION, flags, status, true);
  RT_END
}
RGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                            unsigned long long flags,
                                                            cudaDriverEntryPointQueryResult* status) {
  RT_BEGIN
  return entry_point(symbol, fn, static_cast<int>(version), flags, status, false);
  RT_END
}
RGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn,
                                                                 unsigned int version, unsigned long long flags,
                                                                 cudaDriverEntryPointQueryResult* status) {
  RT_BEGIN
  return entry_point(symbol, fn, static_cast<int>(version), flags, status, true);
  RT_END
}
