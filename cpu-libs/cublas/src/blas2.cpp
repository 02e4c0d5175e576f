// cuBLAS gemv and dot (S/D/C/Z and _64): staged through a Job like gemm and
// computed with OpenBLAS. A vector with increment inc is staged compactly and
// handed to OpenBLAS with increment 1 (or -1, which BLAS reads backwards).
#include <cblas.h>

#include <climits>
#include <complex>
#include <cstring>
#include <memory>
#include <type_traits>

#include "api.h"
#include "convert.h"
#include "handle.h"
#include "job.h"

namespace rgpu::cpublas {

namespace {

// A strided vector of `len` elements as an operand: one row, columns |inc| apart.
Operand vector_operand(const void* ptr, size_t elem, int64_t len, int64_t inc, bool read, bool write) {
  int64_t step = inc < 0 ? -inc : inc;
  return {reinterpret_cast<CUdeviceptr>(ptr), elem, 1, inc == 0 ? 1 : len, step ? step : 1, 0, 1, read, write};
}

int host_inc(int64_t inc) { return inc == 0 ? 0 : (inc > 0 ? 1 : -1); }

template <class T>
constexpr bool real() {
  return std::is_same_v<T, float> || std::is_same_v<T, double>;
}

template <class T>
bool zero(const T& v) {
  if constexpr (real<T>()) {
    return v == T(0);
  } else {
    return v.x == 0 && v.y == 0;
  }
}

template <class T>
void blas_gemv(cublasOperation_t op, int m, int n, T alpha, const T* a, int lda, const T* x, int incx, T beta, T* y,
               int incy) {
  CBLAS_TRANSPOSE t = op == CUBLAS_OP_N ? CblasNoTrans : (op == CUBLAS_OP_T ? CblasTrans : CblasConjTrans);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemv(CblasColMajor, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemv(CblasColMajor, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
  } else if constexpr (std::is_same_v<T, cuComplex>) {
    cblas_cgemv(CblasColMajor, t, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  } else {
    cblas_zgemv(CblasColMajor, t, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  }
}

template <class T>
cublasStatus_t gemv(const char* function, cublasHandle_t h, cublasOperation_t op, int64_t m, int64_t n,
                    const T* alpha, const T* A, int64_t lda, const T* x, int64_t incx, const T* beta, T* y,
                    int64_t incy) {
  return guarded(function, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T && op != CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || incx == 0 || incy == 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if (m > INT_MAX || n > INT_MAX) return CUBLAS_STATUS_NOT_SUPPORTED;
    const int64_t lx = op == CUBLAS_OP_N ? n : m, ly = op == CUBLAS_OP_N ? m : n;
    const bool device = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    auto job = std::make_unique<Job>();
    struct Plan {
      size_t ia, ix, iy, ialpha = ~size_t(0), ibeta = ~size_t(0);
      T alpha{}, beta{};
    } p;
    if (device) {
      p.ialpha = job->add({reinterpret_cast<CUdeviceptr>(alpha), sizeof(T), 1, 1, 1, 0, 1, true, false});
      p.ibeta = job->add({reinterpret_cast<CUdeviceptr>(beta), sizeof(T), 1, 1, 1, 0, 1, true, false});
    } else {
      p.alpha = *alpha;
      p.beta = *beta;
    }
    p.ia = job->add({reinterpret_cast<CUdeviceptr>(A), sizeof(T), m, n, lda, 0, 1, true, false});
    p.ix = job->add(vector_operand(x, sizeof(T), lx, incx, true, false));
    p.iy = job->add(vector_operand(y, sizeof(T), ly, incy, device || !zero(p.beta), true));
    job->compute = [p, op, m, n, ly, incx, incy](Job& j) {
      T alpha = p.alpha, beta = p.beta;
      if (p.ialpha != ~size_t(0)) {
        std::memcpy(&alpha, j.host(p.ialpha), sizeof(T));
        std::memcpy(&beta, j.host(p.ibeta), sizeof(T));
      }
      T* y = static_cast<T*>(j.host(p.iy));
      if (zero(beta)) std::memset(static_cast<void*>(y), 0, size_t(ly) * sizeof(T));  // y is not read
      blas_gemv<T>(op, int(m), int(n), alpha, static_cast<const T*>(j.host(p.ia)), int(m),
                   static_cast<const T*>(j.host(p.ix)), host_inc(incx), beta, y, host_inc(incy));
    };
    ContextGuard guard(h->ctx);
    if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return submit(std::move(job), h->stream);
  });
}

enum class Conj { kNo, kYes };

template <class T>
T blas_dot(int n, const T* x, int incx, const T* y, int incy, Conj conj) {
  if constexpr (std::is_same_v<T, float>) {
    return cblas_sdot(n, x, incx, y, incy);
  } else if constexpr (std::is_same_v<T, double>) {
    return cblas_ddot(n, x, incx, y, incy);
  } else if constexpr (std::is_same_v<T, cuComplex>) {
    T r{};
    if (conj == Conj::kYes) cblas_cdotc_sub(n, x, incx, y, incy, &r);
    else cblas_cdotu_sub(n, x, incx, y, incy, &r);
    return r;
  } else {
    T r{};
    if (conj == Conj::kYes) cblas_zdotc_sub(n, x, incx, y, incy, &r);
    else cblas_zdotu_sub(n, x, incx, y, incy, &r);
    return r;
  }
}

// In host pointer mode the result is a host variable, so the call waits for
// the stream as cuBLAS does; in device mode it returns at once.
template <class T>
cublasStatus_t dot(const char* function, cublasHandle_t h, int64_t n, const T* x, int64_t incx, const T* y,
                   int64_t incy, T* result, Conj conj) {
  return guarded(function, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!result) return CUBLAS_STATUS_INVALID_VALUE;
    if (n > INT_MAX) return CUBLAS_STATUS_NOT_SUPPORTED;
    const bool device = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    const int64_t len = n > 0 ? n : 0;
    auto job = std::make_unique<Job>();
    size_t ix = ~size_t(0), iy = ~size_t(0), ir = ~size_t(0);
    if (len > 0) {
      ix = job->add(vector_operand(x, sizeof(T), len, incx, true, false));
      iy = job->add(vector_operand(y, sizeof(T), len, incy, true, false));
    }
    if (device) ir = job->add({reinterpret_cast<CUdeviceptr>(result), sizeof(T), 1, 1, 1, 0, 1, false, true});
    job->compute = [=](Job& j) {
      T r{};
      if (len > 0) {
        r = blas_dot<T>(int(len), static_cast<const T*>(j.host(ix)), host_inc(incx),
                        static_cast<const T*>(j.host(iy)), host_inc(incy), conj);
      }
      std::memcpy(ir == ~size_t(0) ? static_cast<void*>(result) : j.host(ir), &r, sizeof r);
    };
    ContextGuard guard(h->ctx);
    if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t st = submit(std::move(job), h->stream);
    if (st != CUBLAS_STATUS_SUCCESS || device) return st;
    return cuStreamSynchronize(h->stream) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
  });
}

}  // namespace

}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

#define RGPU_GEMV(NAME, T, I)                                                                                  \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t op, I m, I n, const T* alpha, const T* A, \
                                  I lda, const T* x, I incx, const T* beta, T* y, I incy) {                    \
    return gemv<T>(#NAME, h, op, m, n, alpha, A, lda, x, incx, beta, y, incy);                                 \
  }
RGPU_GEMV(cublasSgemv_v2, float, int)
RGPU_GEMV(cublasSgemv_v2_64, float, int64_t)
RGPU_GEMV(cublasDgemv_v2, double, int)
RGPU_GEMV(cublasDgemv_v2_64, double, int64_t)
RGPU_GEMV(cublasCgemv_v2, cuComplex, int)
RGPU_GEMV(cublasCgemv_v2_64, cuComplex, int64_t)
RGPU_GEMV(cublasZgemv_v2, cuDoubleComplex, int)
RGPU_GEMV(cublasZgemv_v2_64, cuDoubleComplex, int64_t)
#undef RGPU_GEMV

#define RGPU_DOT(NAME, T, I, CONJ)                                                                             \
  RGPU_EXPORT cublasStatus_t NAME(cublasHandle_t h, I n, const T* x, I incx, const T* y, I incy, T* result) { \
    return dot<T>(#NAME, h, n, x, incx, y, incy, result, Conj::CONJ);                                          \
  }
RGPU_DOT(cublasSdot_v2, float, int, kNo)
RGPU_DOT(cublasSdot_v2_64, float, int64_t, kNo)
RGPU_DOT(cublasDdot_v2, double, int, kNo)
RGPU_DOT(cublasDdot_v2_64, double, int64_t, kNo)
RGPU_DOT(cublasCdotu_v2, cuComplex, int, kNo)
RGPU_DOT(cublasCdotu_v2_64, cuComplex, int64_t, kNo)
RGPU_DOT(cublasCdotc_v2, cuComplex, int, kYes)
RGPU_DOT(cublasCdotc_v2_64, cuComplex, int64_t, kYes)
RGPU_DOT(cublasZdotu_v2, cuDoubleComplex, int, kNo)
RGPU_DOT(cublasZdotu_v2_64, cuDoubleComplex, int64_t, kNo)
RGPU_DOT(cublasZdotc_v2, cuDoubleComplex, int, kYes)
RGPU_DOT(cublasZdotc_v2_64, cuDoubleComplex, int64_t, kYes)
#undef RGPU_DOT
