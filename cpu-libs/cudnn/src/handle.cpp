// cuDNN handles, versions and status strings.
#include "handle.h"

#include <cuda_runtime_api.h>

namespace {

CUcontext current_context() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

}  // namespace

using rgpu::cpudnn::guarded;

RGPU_EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  return guarded("cudnnCreate", [&] {
    if (!handle) return CUDNN_STATUS_BAD_PARAM;
    CUcontext ctx = current_context();
    if (!ctx) return CUDNN_STATUS_NOT_INITIALIZED;
    auto* h = new cudnnContext();
    h->ctx = ctx;
    *handle = h;
    return CUDNN_STATUS_SUCCESS;
  });
}

// Queued work holds no reference to the handle (each job owns its primitive
// and engine copy), so it may be destroyed while work is in flight.
RGPU_EXPORT cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  if (const uint64_t jobs = handle->usage->jobs.load()) {
    RGPU_INFO("cpu cudnn: handle destroyed jobs=%llu compute_ms=%.1f", static_cast<unsigned long long>(jobs),
              double(handle->usage->compute_ns.load()) / 1e6);
  }
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!handle || !stream) return CUDNN_STATUS_BAD_PARAM;
  *stream = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
RGPU_EXPORT size_t cudnnGetCudartVersion(void) { return CUDART_VERSION; }

RGPU_EXPORT cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  switch (type) {
    case MAJOR_VERSION: *value = CUDNN_MAJOR; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUDNN_MINOR; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}
