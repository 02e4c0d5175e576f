// The stand-in's handle entry points: create, destroy, stream, pointer mode,
// version.
#include "sparse.h"

namespace {

CUcontext current_context() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

}  // namespace

RGPU_EXPORT cusparseStatus_t cusparseCreate(cusparseHandle_t* handle) {
  return rgpu::cpusparse::guarded("cusparseCreate", [&] {
    if (!handle) return CUSPARSE_STATUS_INVALID_VALUE;
    CUcontext ctx = current_context();
    if (!ctx) return CUSPARSE_STATUS_NOT_INITIALIZED;
    auto* h = new cusparseContext();
    h->ctx = ctx;
    *handle = h;
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseDestroy(cusparseHandle_t handle) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  delete handle;  // queued work holds its own share of `failed`
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t streamId) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  handle->stream = reinterpret_cast<CUstream>(streamId);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseGetStream(cusparseHandle_t handle, cudaStream_t* streamId) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!streamId) return CUSPARSE_STATUS_INVALID_VALUE;
  *streamId = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSetPointerMode(cusparseHandle_t handle, cusparsePointerMode_t mode) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (mode != CUSPARSE_POINTER_MODE_HOST && mode != CUSPARSE_POINTER_MODE_DEVICE) return CUSPARSE_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseGetPointerMode(cusparseHandle_t handle, cusparsePointerMode_t* mode) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!mode) return CUSPARSE_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUSPARSE_STATUS_SUCCESS;
}

// The version of the headers the stand-in was built with.
RGPU_EXPORT cusparseStatus_t cusparseGetVersion(cusparseHandle_t handle, int* version) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!version) return CUSPARSE_STATUS_INVALID_VALUE;
  *version = CUSPARSE_VERSION;
  return CUSPARSE_STATUS_SUCCESS;
}
