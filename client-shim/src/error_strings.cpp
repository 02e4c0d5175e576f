// cuGetErrorName and cuGetErrorString, answered locally from the generated
// table of CUresult values (error_names.h).
#include <cuda.h>

#include "error_names.h"
#include "unimplemented.h"

namespace {

// Unknown codes give CUDA_ERROR_INVALID_VALUE and a null string, as CUDA does.
CUresult lookup(const char* found, const char** out) noexcept {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = found;
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  return lookup(rgpu::shim::driver_error_name(error), pStr);
}

RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  return lookup(rgpu::shim::driver_error_description(error), pStr);
}

}  // extern "C"
