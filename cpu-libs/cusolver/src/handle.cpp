// cuSOLVER handles, parameter sets, Jacobi settings, and the staging helpers
// every computation shares (api.h).
#include <new>

#include "api.h"

namespace rgpu::cpusolver {

cusolverStatus_t submit(cusolverDnHandle_t h, std::unique_ptr<Job> job) {
  cpublas::ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUSOLVER_STATUS_NOT_INITIALIZED;
  switch (cpublas::submit(std::move(job), h->stream)) {
    case CUBLAS_STATUS_SUCCESS: return CUSOLVER_STATUS_SUCCESS;
    case CUBLAS_STATUS_ALLOC_FAILED: return CUSOLVER_STATUS_ALLOC_FAILED;
    default: return CUSOLVER_STATUS_EXECUTION_FAILED;
  }
}

cusolverStatus_t read_pointers(cusolverDnHandle_t h, const void* array, int64_t count, std::vector<uint64_t>* out) {
  if (count < 0) return CUSOLVER_STATUS_INVALID_VALUE;
  out->assign(size_t(count), 0);
  if (count == 0) return CUSOLVER_STATUS_SUCCESS;
  if (!array) return CUSOLVER_STATUS_INVALID_VALUE;
  cpublas::ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (cuStreamSynchronize(h->stream) != CUDA_SUCCESS) return CUSOLVER_STATUS_EXECUTION_FAILED;
  // The CPU device checks the array's range; a bad pointer inside it is
  // refused when the job's copies check each operand.
  if (cuMemcpyDtoH(out->data(), reinterpret_cast<CUdeviceptr>(array), size_t(count) * sizeof(uint64_t)) !=
      CUDA_SUCCESS)
    return CUSOLVER_STATUS_INVALID_VALUE;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t no_workspace(cusolverDnHandle_t h, int* lwork) {
  if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!lwork) return CUSOLVER_STATUS_INVALID_VALUE;
  *lwork = 0;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t no_workspace_64(cusolverDnHandle_t h, size_t* device, size_t* host) {
  if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!device || !host) return CUSOLVER_STATUS_INVALID_VALUE;
  *device = 0;
  *host = 0;
  return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t wait(cusolverDnHandle_t h) {
  cpublas::ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUSOLVER_STATUS_NOT_INITIALIZED;
  return cuStreamSynchronize(h->stream) == CUDA_SUCCESS ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_EXECUTION_FAILED;
}

}  // namespace rgpu::cpusolver

RGPU_EXPORT cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t* handle) {
  if (!handle) return CUSOLVER_STATUS_INVALID_VALUE;
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return CUSOLVER_STATUS_NOT_INITIALIZED;
  auto* h = new (std::nothrow) cusolverDnContext();
  if (!h) return CUSOLVER_STATUS_ALLOC_FAILED;
  h->ctx = ctx;
  *handle = h;
  return CUSOLVER_STATUS_SUCCESS;
}

// Queued work holds no reference to the handle (as with cuSOLVER).
RGPU_EXPORT cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle) {
  if (!handle) return CUSOLVER_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUSOLVER_STATUS_SUCCESS;
}

RGPU_EXPORT cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUSOLVER_STATUS_NOT_INITIALIZED;
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUSOLVER_STATUS_SUCCESS;
}

RGPU_EXPORT cusolverStatus_t cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t* stream) {
  if (!handle) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!stream) return CUSOLVER_STATUS_INVALID_VALUE;
  *stream = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUSOLVER_STATUS_SUCCESS;
}

RGPU_EXPORT cusolverStatus_t cusolverDnGetVersion(int* version) {
  if (!version) return CUSOLVER_STATUS_INVALID_VALUE;
  *version = CUSOLVER_VERSION;
  return CUSOLVER_STATUS_SUCCESS;
}

RGPU_EXPORT cusolverStatus_t cusolverDnCreateParams(cusolverDnParams_t* params) {
  if (!params) return CUSOLVER_STATUS_INVALID_VALUE;
  *params = new (std::nothrow) cusolverDnParams();
  return *params ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}

RGPU_EXPORT cusolverStatus_t cusolverDnDestroyParams(cusolverDnParams_t params) {
  delete params;
  return CUSOLVER_STATUS_SUCCESS;
}

// The Jacobi settings (handle.h says what they change: nothing but what Get answers).
#define RGPU_JACOBI_INFO(T, Name, X)                                                                    \
  RGPU_EXPORT cusolverStatus_t cusolverDnCreate##Name(T##_t* info) {                                 \
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;                                                 \
    *info = new (std::nothrow) T();                                                                  \
    return *info ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;                           \
  }                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDnDestroy##Name(T##_t info) {                                 \
    delete info;                                                                                     \
    return CUSOLVER_STATUS_SUCCESS;                                                                  \
  }                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##X##SetTolerance(T##_t info, double tolerance) {          \
    if (!info) return CUSOLVER_STATUS_INVALID_VALUE;                                                 \
    info->tolerance = tolerance;                                                                     \
    return CUSOLVER_STATUS_SUCCESS;                                                                  \
  }                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##X##SetMaxSweeps(T##_t info, int max_sweeps) {           \
    if (!info || max_sweeps < 0) return CUSOLVER_STATUS_INVALID_VALUE;                               \
    info->max_sweeps = max_sweeps;                                                                   \
    return CUSOLVER_STATUS_SUCCESS;                                                                  \
  }                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##X##GetSweeps(cusolverDnHandle_t, T##_t info, int* sweeps) { \
    if (!info || !sweeps) return CUSOLVER_STATUS_INVALID_VALUE;                                      \
    *sweeps = 1;                                                                                     \
    return CUSOLVER_STATUS_SUCCESS;                                                                  \
  }                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##X##GetResidual(cusolverDnHandle_t, T##_t info, double* r) { \
    if (!info || !r) return CUSOLVER_STATUS_INVALID_VALUE;                                           \
    *r = 0;                                                                                          \
    return CUSOLVER_STATUS_SUCCESS;                                                                  \
  }

RGPU_JACOBI_INFO(gesvdjInfo, GesvdjInfo, Xgesvdj)
RGPU_JACOBI_INFO(syevjInfo, SyevjInfo, Xsyevj)

RGPU_EXPORT cusolverStatus_t cusolverDnXgesvdjSetSortEig(gesvdjInfo_t info, int sort) {
  if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
  info->sort = sort;
  return CUSOLVER_STATUS_SUCCESS;
}

RGPU_EXPORT cusolverStatus_t cusolverDnXsyevjSetSortEig(syevjInfo_t info, int sort) {
  if (!info) return CUSOLVER_STATUS_INVALID_VALUE;
  info->sort = sort;
  return CUSOLVER_STATUS_SUCCESS;
}
