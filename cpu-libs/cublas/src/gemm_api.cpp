// cuBLAS gemm entry points: S/D/C/Z gemm, strided batched, the Ex forms and
// their _64 variants. Each checks cuBLAS's argument rules, then describes the
// problem as a GemmSpec for the engine.
#include "gemm_api.h"

#include <complex>

#include "api.h"
#include "handle.h"
#include "job.h"

namespace rgpu::cpublas {

namespace {

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

int64_t at_least_1(int64_t v) { return v > 1 ? v : 1; }

template <class T>
constexpr cudaDataType type_of() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  if constexpr (std::is_same_v<T, cuComplex>) return CUDA_C_32F;
  return CUDA_C_64F;
}

template <class T>
constexpr Domain domain_of() {
  if constexpr (std::is_same_v<T, float>) return Domain::kReal32;
  if constexpr (std::is_same_v<T, double>) return Domain::kReal64;
  if constexpr (std::is_same_v<T, cuComplex>) return Domain::kComplex32;
  return Domain::kComplex64;
}

// S/D/C/Z gemm, strided or not (batch 1, strides 0).
template <class T>
cublasStatus_t typed_gemm(const char* function, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                          int64_t m, int64_t n, int64_t k, const T* alpha, const T* A, int64_t lda, int64_t sa,
                          const T* B, int64_t ldb, int64_t sb, const T* beta, T* C, int64_t ldc, int64_t sc,
                          int64_t batch) {
  return guarded(function, [&] {
    cublasStatus_t st = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    GemmSpec s;
    s.op_a = ta;
    s.op_b = tb;
    s.m = m;
    s.n = n;
    s.k = k;
    s.batch = batch;
    constexpr cudaDataType t = type_of<T>();
    s.a = {A, t, lda, sa};
    s.b = {B, t, ldb, sb};
    s.c = s.d = {C, t, ldc, sc};
    s.domain = domain_of<T>();
    s.scale_type = t;
    s.alpha = alpha;
    s.beta = beta;
    return run_gemm(h, s);
  });
}

cublasStatus_t ex_gemm(const char* function, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                       int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType at, int64_t lda,
                       int64_t sa, const void* B, cudaDataType bt, int64_t ldb, int64_t sb, const void* beta, void* C,
                       cudaDataType ct, int64_t ldc, int64_t sc, int64_t batch, cublasComputeType_t compute) {
  return guarded(function, [&] {
    cublasStatus_t st = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    GemmSpec s;
    if (at != bt || !gemm_types(compute, at, ct, &s.domain, &s.scale_type)) {
      RGPU_WARN("cpu cublas: unsupported types function=%s a=%d b=%d c=%d compute=%d", function, int(at), int(bt),
                int(ct), int(compute));
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    s.op_a = ta;
    s.op_b = tb;
    s.m = m;
    s.n = n;
    s.k = k;
    s.batch = batch;
    s.a = {A, at, lda, sa};
    s.b = {B, bt, ldb, sb};
    s.c = s.d = {C, ct, ldc, sc};
    s.alpha = alpha;
    s.beta = beta;
    return run_gemm(h, s);
  });
}

// cublasSgemmEx: fp32 compute and float scalars, A/B/C of fp32, fp16 or bf16.
cublasStatus_t sgemm_ex(const char* function, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                        int64_t n, int64_t k, const float* alpha, const void* A, cudaDataType at, int64_t lda,
                        const void* B, cudaDataType bt, int64_t ldb, const float* beta, void* C, cudaDataType ct,
                        int64_t ldc) {
  if (h && (at == CUDA_C_32F || ct == CUDA_C_32F)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return ex_gemm(function, h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1,
                 CUBLAS_COMPUTE_32F);
}

}  // namespace

cublasStatus_t check_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                          int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int64_t batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(ta) || !valid_op(tb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < at_least_1(ta == CUBLAS_OP_N ? m : k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldb < at_least_1(tb == CUBLAS_OP_N ? k : n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldc < at_least_1(m)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t run_gemm(cublasHandle_t h, GemmSpec spec) {
  spec.device_scalars = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
  return enqueue_gemm(spec, h->stream);
}

}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

// The C ABI: one definition per exported name, each forwarding to the typed
// implementation above.
#define RGPU_GEMM(NAME, T, I)                                                                                     \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,   \
                                  const T* alpha, const T* A, I lda, const T* B, I ldb, const T* beta, T* C,      \
                                  I ldc) {                                                                        \
    return typed_gemm<T>(#NAME, h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);             \
  }
RGPU_GEMM(cublasSgemm_v2, float, int)
RGPU_GEMM(cublasSgemm_v2_64, float, int64_t)
RGPU_GEMM(cublasDgemm_v2, double, int)
RGPU_GEMM(cublasDgemm_v2_64, double, int64_t)
RGPU_GEMM(cublasCgemm_v2, cuComplex, int)
RGPU_GEMM(cublasCgemm_v2_64, cuComplex, int64_t)
RGPU_GEMM(cublasZgemm_v2, cuDoubleComplex, int)
RGPU_GEMM(cublasZgemm_v2_64, cuDoubleComplex, int64_t)
#undef RGPU_GEMM

#define RGPU_GEMM_STRIDED(NAME, T, I)                                                                              \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,    \
                                  const T* alpha, const T* A, I lda, long long sa, const T* B, I ldb,             \
                                  long long sb, const T* beta, T* C, I ldc, long long sc, I batch) {              \
    return typed_gemm<T>(#NAME, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);       \
  }
RGPU_GEMM_STRIDED(cublasSgemmStridedBatched, float, int)
RGPU_GEMM_STRIDED(cublasSgemmStridedBatched_64, float, int64_t)
RGPU_GEMM_STRIDED(cublasDgemmStridedBatched, double, int)
RGPU_GEMM_STRIDED(cublasDgemmStridedBatched_64, double, int64_t)
RGPU_GEMM_STRIDED(cublasCgemmStridedBatched, cuComplex, int)
RGPU_GEMM_STRIDED(cublasCgemmStridedBatched_64, cuComplex, int64_t)
RGPU_GEMM_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex, int)
RGPU_GEMM_STRIDED(cublasZgemmStridedBatched_64, cuDoubleComplex, int64_t)
#undef RGPU_GEMM_STRIDED

#define RGPU_GEMM_EX(NAME, I)                                                                                      \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,    \
                                  const void* alpha, const void* A, cudaDataType at, I lda, const void* B,        \
                                  cudaDataType bt, I ldb, const void* beta, void* C, cudaDataType ct, I ldc,      \
                                  cublasComputeType_t compute, cublasGemmAlgo_t) {                                \
    return ex_gemm(#NAME, h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1,         \
                   compute);                                                                                      \
  }
RGPU_GEMM_EX(cublasGemmEx, int)
RGPU_GEMM_EX(cublasGemmEx_64, int64_t)
#undef RGPU_GEMM_EX

#define RGPU_GEMM_STRIDED_EX(NAME, I)                                                                              \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,    \
                                  const void* alpha, const void* A, cudaDataType at, I lda, long long sa,         \
                                  const void* B, cudaDataType bt, I ldb, long long sb, const void* beta, void* C, \
                                  cudaDataType ct, I ldc, long long sc, I batch, cublasComputeType_t compute,     \
                                  cublasGemmAlgo_t) {                                                             \
    return ex_gemm(#NAME, h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch,  \
                   compute);                                                                                      \
  }
RGPU_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
RGPU_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)
#undef RGPU_GEMM_STRIDED_EX

#define RGPU_SGEMM_EX(NAME, I)                                                                                     \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k,    \
                                  const float* alpha, const void* A, cudaDataType at, I lda, const void* B,       \
                                  cudaDataType bt, I ldb, const float* beta, void* C, cudaDataType ct, I ldc) {   \
    return sgemm_ex(#NAME, h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc);                   \
  }
RGPU_SGEMM_EX(cublasSgemmEx, int)
RGPU_SGEMM_EX(cublasSgemmEx_64, int64_t)
#undef RGPU_SGEMM_EX
