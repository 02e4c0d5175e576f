// The libcudart.so.12 functions whose CUDA 12 ABI differs from CUDA 13's
// (api/runtime12.api says which, and docs/compatibility.md why).
// Each fills CUDA 12's layout from the CUDA 13 implementation beside it. The
// names 12 shares with 13 are defined here as rgpu_cudart12_<name> and
// exported as name@libcudart.so.12 by the generated linker script; the names
// only 12 has are defined under their own.
#include <cstring>

#include "../../generated/cuda12_types.h"
#include "runtime.h"

using namespace rgpu::runtime;
namespace c12 = rgpu::cuda12;

// Defined in device.cpp; the CUDA 13 headers declare no per-thread form.
extern "C" cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int version,
                                                             unsigned long long flags,
                                                             cudaDriverEntryPointQueryResult* status);

namespace {

int attribute(int device, CUdevice_attribute a) {
  int v = 0;
  return cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS ? v : 0;
}

// CUDA 12's cudaDeviceProp: the members 13 kept, copied from 13's answer, and
// those 13 removed, from the driver's attributes.
cudaError_t device_properties(c12::cudaDeviceProp* out, int device) {
  if (!out) return record(cudaErrorInvalidValue);
  cudaDeviceProp now;
  if (cudaError_t e = cudaGetDeviceProperties(&now, device); e != cudaSuccess) return e;
  std::memset(out, 0, sizeof(*out));
#define RGPU_COPY(m)                                                          \
  static_assert(sizeof(out->m) == sizeof(now.m), "member " #m " changed size"); \
  std::memcpy(&out->m, &now.m, sizeof(out->m));
  RGPU_CUDA12_DEVICE_PROP_SHARED(RGPU_COPY)
#undef RGPU_COPY
  out->clockRate = attribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  out->deviceOverlap = attribute(device, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP);
  out->kernelExecTimeoutEnabled = attribute(device, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT);
  out->computeMode = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  out->maxTexture1DLinear = attribute(device, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
  out->memoryClockRate = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  out->singleToDoublePrecisionPerfRatio = attribute(device, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO);
  out->cooperativeMultiDeviceLaunch = attribute(device, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH);
  // reserved2, reserved1 and reserved stay zero.
  return cudaSuccess;
}

// Every member 12 has but 13 does not is filled above: a new one in the
// facts fails here until it is.
#define RGPU_COUNT(m) +1
static_assert(0 RGPU_CUDA12_DEVICE_PROP_ONLY12(RGPU_COUNT) == 11, "fill the new CUDA 12 members");
static_assert(0 RGPU_CUDA12_POINTER_ATTRIBUTES_ONLY12(RGPU_COUNT) == 0, "fill the new CUDA 12 members");
#undef RGPU_COUNT

cudaError_t old_capture_info(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                             cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* count, bool per_thread) {
  RT_BEGIN
  return record(capture_info(s, per_thread, status, id, graph, deps, nullptr, count));
  RT_END
}

}  // namespace

// ---- device properties ------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGetDeviceProperties(c12::cudaDeviceProp* prop, int device) {
  return device_properties(prop, device);
}
RGPU_RT_EXPORT cudaError_t cudaGetDeviceProperties_v2(c12::cudaDeviceProp* prop, int device) {
  return device_properties(prop, device);
}

// ---- pointer attributes: 12's struct is 13's without its reserved tail -------------

RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaPointerGetAttributes(c12::cudaPointerAttributes* attr, const void* ptr) {
  if (!attr) return record(cudaErrorInvalidValue);
  cudaPointerAttributes now;
  if (cudaError_t e = cudaPointerGetAttributes(&now, ptr); e != cudaSuccess) return e;
#define RGPU_COPY(m) attr->m = now.m;
  RGPU_CUDA12_POINTER_ATTRIBUTES_SHARED(RGPU_COPY)
#undef RGPU_COPY
  return cudaSuccess;
}

// ---- stream capture: 12's forms of the capture query ---------------------------------

// CUDA 11's three-argument form, which libcudart.so.12 still exports.
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status,
                                                                  unsigned long long* id) {
  return old_capture_info(s, status, id, nullptr, nullptr, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaStreamGetCaptureInfo_ptsz(cudaStream_t s,
                                                                       cudaStreamCaptureStatus* status,
                                                                       unsigned long long* id) {
  return old_capture_info(s, status, id, nullptr, nullptr, nullptr, true);
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t s, cudaStreamCaptureStatus* status,
                                                       unsigned long long* id, cudaGraph_t* graph,
                                                       const cudaGraphNode_t** deps, size_t* count) {
  return old_capture_info(s, status, id, graph, deps, count, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2_ptsz(cudaStream_t s, cudaStreamCaptureStatus* status,
                                                            unsigned long long* id, cudaGraph_t* graph,
                                                            const cudaGraphNode_t** deps, size_t* count) {
  return old_capture_info(s, status, id, graph, deps, count, true);
}

// ---- versions: a CUDA 12 program runs on CUDA 12's runtime ---------------------------

RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaRuntimeGetVersion(int* version) {
  if (!version) return record(cudaErrorInvalidValue);
  *version = c12::kRuntimeVersion;
  return cudaSuccess;
}

// Driver entry points as CUDA 12 names them: looked up at 12's version, so a
// name whose signature changed in 13 (cuCtxCreate) gives 12's variant.
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGetDriverEntryPoint(const char* symbol, void** fn,
                                                                 unsigned long long flags,
                                                                 cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, c12::kRuntimeVersion, flags, status);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn,
                                                                      unsigned long long flags,
                                                                      cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion_ptsz(symbol, fn, c12::kRuntimeVersion, flags, status);
}

// ---- CUDA 12's deprecated thread-scoped names, which only 12 exports ---------------------

RGPU_RT_EXPORT cudaError_t cudaThreadExit() { return cudaDeviceReset(); }
RGPU_RT_EXPORT cudaError_t cudaThreadSynchronize() { return cudaDeviceSynchronize(); }
RGPU_RT_EXPORT cudaError_t cudaThreadGetLimit(size_t* value, cudaLimit limit) {
  return cudaDeviceGetLimit(value, limit);
}
RGPU_RT_EXPORT cudaError_t cudaThreadSetLimit(cudaLimit limit, size_t value) {
  return cudaDeviceSetLimit(limit, value);
}

// ---- graph edges: 12's forms without edge data, and its _v2 forms (13's) ----

RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t* from,
                                                                  const cudaGraphNode_t* to, size_t n) {
  return cudaGraphAddDependencies(g, from, to, nullptr, n);
}
RGPU_RT_EXPORT cudaError_t cudaGraphAddDependencies_v2(cudaGraph_t g, const cudaGraphNode_t* from,
                                                       const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                                       size_t n) {
  return cudaGraphAddDependencies(g, from, to, edges, n);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGraphRemoveDependencies(cudaGraph_t g, const cudaGraphNode_t* from,
                                                                     const cudaGraphNode_t* to, size_t n) {
  return cudaGraphRemoveDependencies(g, from, to, nullptr, n);
}
RGPU_RT_EXPORT cudaError_t cudaGraphRemoveDependencies_v2(cudaGraph_t g, const cudaGraphNode_t* from,
                                                          const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                                          size_t n) {
  return cudaGraphRemoveDependencies(g, from, to, edges, n);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGraphGetEdges(cudaGraph_t g, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                                           size_t* n) {
  return cudaGraphGetEdges(g, from, to, nullptr, n);
}
RGPU_RT_EXPORT cudaError_t cudaGraphGetEdges_v2(cudaGraph_t g, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                                cudaGraphEdgeData* edges, size_t* n) {
  return cudaGraphGetEdges(g, from, to, edges, n);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                                      size_t* n) {
  return cudaGraphNodeGetDependencies(node, deps, nullptr, n);
}
RGPU_RT_EXPORT cudaError_t cudaGraphNodeGetDependencies_v2(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                           cudaGraphEdgeData* edges, size_t* n) {
  return cudaGraphNodeGetDependencies(node, deps, edges, n);
}
RGPU_RT_EXPORT cudaError_t rgpu_cudart12_cudaGraphNodeGetDependentNodes(cudaGraphNode_t node,
                                                                        cudaGraphNode_t* dependents, size_t* n) {
  return cudaGraphNodeGetDependentNodes(node, dependents, nullptr, n);
}
RGPU_RT_EXPORT cudaError_t cudaGraphNodeGetDependentNodes_v2(cudaGraphNode_t node, cudaGraphNode_t* dependents,
                                                             cudaGraphEdgeData* edges, size_t* n) {
  return cudaGraphNodeGetDependentNodes(node, dependents, edges, n);
}
