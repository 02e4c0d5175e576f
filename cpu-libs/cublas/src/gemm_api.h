// Argument checks and dispatch shared by the cuBLAS gemm entry points.
#pragma once

#include <cublas_api.h>

#include <cstdint>

#include "gemm.h"

namespace rgpu::cpublas {

// cuBLAS's argument rules for gemm: CUBLAS_STATUS_NOT_INITIALIZED without a
// handle; CUBLAS_STATUS_INVALID_VALUE for an unknown operation, a negative
// m, n, k or batch count, or a leading dimension below max(1, rows of the
// stored matrix).
cublasStatus_t check_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int64_t m,
                          int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int64_t batch);

// Queues `spec` on the handle's stream in its context, with its pointer mode.
cublasStatus_t run_gemm(cublasHandle_t handle, GemmSpec spec);

}  // namespace rgpu::cpublas
