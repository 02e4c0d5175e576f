// What every entry point file needs: the export marker, the wrapper that
// keeps C++ exceptions from crossing the C ABI, and the staging of a call's
// operands through the cuBLAS stand-in's Job (cpu-libs/cublas/src/job.h).
#pragma once

#include <cusolverDn.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "handle.h"
#include "job.h"
#include "rgpu/common/log.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace rgpu::cpusolver {

using cpublas::Job;
using cpublas::Operand;

// Runs `body` (returning cusolverStatus_t); an allocation failure becomes
// CUSOLVER_STATUS_ALLOC_FAILED, any other exception CUSOLVER_STATUS_INTERNAL_ERROR.
template <class F>
cusolverStatus_t guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    RGPU_WARN("cpu cusolver: out of host memory function=%s", function);
    return CUSOLVER_STATUS_ALLOC_FAILED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cusolver: internal error function=%s error=%s", function, e.what());
    return CUSOLVER_STATUS_INTERNAL_ERROR;
  }
}

// A column-major matrix operand (rows x cols, leading dimension ld; `batch`
// of them `stride` elements apart).
inline Operand matrix(const void* p, size_t elem, int64_t rows, int64_t cols, int64_t ld, bool read, bool write,
                      int64_t stride = 0, int64_t batch = 1) {
  return {reinterpret_cast<CUdeviceptr>(p), elem, rows, cols, ld < 1 ? 1 : ld, stride, batch, read, write};
}
// `len` contiguous elements.
inline Operand vector(const void* p, size_t elem, int64_t len, bool read, bool write) {
  return {reinterpret_cast<CUdeviceptr>(p), elem, len, 1, len < 1 ? 1 : len, 0, 1, read, write};
}

// Queues `job` on the handle's stream in its context.
cusolverStatus_t submit(cusolverDnHandle_t h, std::unique_ptr<Job> job);

// Reads `count` device pointers from the array at `array` once the
// handle's stream has finished the work before (which may have written it).
cusolverStatus_t read_pointers(cusolverDnHandle_t h, const void* array, int64_t count, std::vector<uint64_t>* out);

// The workspace every _bufferSize answers: none (the host copies are the
// scratch space); the 64-bit API's, none on the device nor on the host.
cusolverStatus_t no_workspace(cusolverDnHandle_t h, int* lwork);
cusolverStatus_t no_workspace_64(cusolverDnHandle_t h, size_t* device, size_t* host);

// Waits for the handle's stream (a call that answers on the host).
cusolverStatus_t wait(cusolverDnHandle_t h);

// LAPACK's uplo and trans letters for cuBLAS's enums; 0 for a value that
// has none.
inline char uplo_char(cublasFillMode_t u) {
  return u == CUBLAS_FILL_MODE_LOWER ? 'L' : (u == CUBLAS_FILL_MODE_UPPER ? 'U' : 0);
}
inline char trans_char(cublasOperation_t t) {
  return t == CUBLAS_OP_N ? 'N' : (t == CUBLAS_OP_T ? 'T' : (t == CUBLAS_OP_C ? 'C' : 0));
}

}  // namespace rgpu::cpusolver
