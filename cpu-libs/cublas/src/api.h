// What every entry point file needs: the export marker and the wrapper that
// keeps C++ exceptions from crossing the C ABI.
#pragma once

#include <cublas_api.h>

#include <exception>
#include <new>

#include "rgpu/common/log.h"

// Entry points are the only symbols with default visibility; exports.map
// lists them again so that nothing else leaks.
#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace rgpu::cpublas {

// Runs `body` (returning cublasStatus_t); an allocation failure becomes
// CUBLAS_STATUS_ALLOC_FAILED, any other exception CUBLAS_STATUS_INTERNAL_ERROR.
template <class F>
cublasStatus_t guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    RGPU_WARN("cpu cublas: out of host memory function=%s", function);
    return CUBLAS_STATUS_ALLOC_FAILED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cublas: internal error function=%s error=%s", function, e.what());
    return CUBLAS_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace rgpu::cpublas
