// cuGetErrorName and cuGetErrorString, answered locally from the generated
// table of CUresult values.
#include <cuda.h>

#include <algorithm>
#include <iterator>

#include "unimplemented.h"

namespace rgpu::shim {
namespace {

// One CUresult value. Immutable static data; any thread.
struct ErrorInfo {
  CUresult value;
  const char* name;
  const char* description;
};

constexpr ErrorInfo kErrors[] = {
#include "../generated/driver_errors.inc"
};

static_assert(std::is_sorted(std::begin(kErrors), std::end(kErrors),
                             [](const ErrorInfo& a, const ErrorInfo& b) { return a.value < b.value; }));

const ErrorInfo* find_error(CUresult value) noexcept {
  const ErrorInfo* it = std::lower_bound(std::begin(kErrors), std::end(kErrors), value,
                                         [](const ErrorInfo& e, CUresult v) { return e.value < v; });
  return it != std::end(kErrors) && it->value == value ? it : nullptr;
}

// Unknown codes give CUDA_ERROR_INVALID_VALUE and a null string, as CUDA does.
CUresult lookup(CUresult error, const char** out, bool want_name) noexcept {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorInfo* info = find_error(error);
  if (info == nullptr) {
    *out = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = want_name ? info->name : info->description;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace rgpu::shim

extern "C" {

RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  return rgpu::shim::lookup(error, pStr, true);
}

RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  return rgpu::shim::lookup(error, pStr, false);
}

}  // extern "C"
