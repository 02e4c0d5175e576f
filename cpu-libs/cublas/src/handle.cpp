// cuBLAS handle management, versions and status strings.
#include "handle.h"

#include <new>

#include "api.h"

namespace rgpu::cpublas {

CUcontext current_context() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

RGPU_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  CUcontext ctx = current_context();
  if (!ctx) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new (std::nothrow) cublasContext();
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  h->ctx = ctx;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

// Queued work holds no reference to the handle, so it may be destroyed while
// its GEMMs are still in flight, as with cuBLAS.
RGPU_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = kVersion;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

RGPU_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t size) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!workspace && size) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_size = size;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = reinterpret_cast<CUstream>(stream);
  // cuBLAS drops a user workspace when the stream changes (it may be in use
  // by the old stream); do the same so Get answers alike.
  handle->workspace = nullptr;
  handle->workspace_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->atomics_mode;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) return CUBLAS_STATUS_INVALID_VALUE;
  handle->atomics_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

// Math modes only allow faster, less precise paths on a GPU; the CPU always
// computes in the full precision of the compute type, which every mode permits.
RGPU_EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  unsigned base = unsigned(mode) & ~unsigned(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  switch (base) {
    case CUBLAS_DEFAULT_MATH:
    case CUBLAS_TENSOR_OP_MATH:
    case CUBLAS_PEDANTIC_MATH:
    case CUBLAS_TF32_TENSOR_OP_MATH:
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
    case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
      handle->math_mode = mode;
      return CUBLAS_STATUS_SUCCESS;
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

RGPU_EXPORT const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

RGPU_EXPORT const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "an error was detected when checking the current licensing";
  }
  return "unknown error";
}
