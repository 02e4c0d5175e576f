// cuBLAS's triangular solves and batched LAPACK-like calls (trsm and its
// batch, getrfBatched, getrsBatched, geqrfBatched, gelsBatched), S and D:
// staged through a Job and computed with OpenBLAS and LAPACK(E) in stream
// order. A batched call's arrays of matrix pointers live in device memory:
// they are read once the handle's stream has done the work before (which
// may have written them), and each matrix is an operand the CPU device
// checks like any other.
#include <cblas.h>

#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "api.h"
#include "handle.h"
#include "job.h"
#include "lapack.h"

namespace rgpu::cpublas {
namespace {

namespace la = rgpu::cpulapack;

Operand mat(const void* p, size_t elem, int64_t rows, int64_t cols, int64_t ld, bool read, bool write) {
  return {reinterpret_cast<CUdeviceptr>(p), elem, rows, cols, ld < 1 ? 1 : ld, 0, 1, read, write};
}
Operand vec(const void* p, size_t elem, int64_t len, bool read, bool write) {
  return {reinterpret_cast<CUdeviceptr>(p), elem, len, 1, len < 1 ? 1 : len, 0, 1, read, write};
}

cublasStatus_t read_pointers(cublasHandle_t h, const void* array, int count, std::vector<uint64_t>* out) {
  out->assign(size_t(count > 0 ? count : 0), 0);
  if (count <= 0) return CUBLAS_STATUS_SUCCESS;
  if (!array) return CUBLAS_STATUS_INVALID_VALUE;
  ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (cuStreamSynchronize(h->stream) != CUDA_SUCCESS) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (cuMemcpyDtoH(out->data(), reinterpret_cast<CUdeviceptr>(array), size_t(count) * sizeof(uint64_t)) !=
      CUDA_SUCCESS)
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t queue(cublasHandle_t h, std::unique_ptr<Job> job) {
  ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
  return submit(std::move(job), h->stream);
}

template <class T>
void blas_trsm(CBLAS_SIDE s, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int m, int n, T alpha, const T* a,
               int lda, T* b, int ldb) {
  if constexpr (std::is_same_v<T, float>) cblas_strsm(CblasColMajor, s, u, t, d, m, n, alpha, a, lda, b, ldb);
  else cblas_dtrsm(CblasColMajor, s, u, t, d, m, n, alpha, a, lda, b, ldb);
}

// trsm on `count` pairs of matrices: A[i] (k x k) and B[i] (m x n), each an
// address; alpha from the host or (device mode) from device memory.
template <class T>
cublasStatus_t trsm(const char* fn, cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                    cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,
                    const std::vector<uint64_t>& as, int lda, const std::vector<uint64_t>& bs, int ldb) {
  return guarded(fn, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((side != CUBLAS_SIDE_LEFT && side != CUBLAS_SIDE_RIGHT) ||
        (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) ||
        (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C) ||
        (diag != CUBLAS_DIAG_NON_UNIT && diag != CUBLAS_DIAG_UNIT) || !alpha)
      return CUBLAS_STATUS_INVALID_VALUE;
    const int k = side == CUBLAS_SIDE_LEFT ? m : n;
    if (m < 0 || n < 0 || lda < (k > 1 ? k : 1) || ldb < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || as.empty()) return CUBLAS_STATUS_SUCCESS;
    auto job = std::make_unique<Job>();
    const bool device = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    T host_alpha{};
    size_t ialpha = ~size_t(0);
    if (device) ialpha = job->add(vec(alpha, sizeof(T), 1, true, false));
    else host_alpha = *alpha;
    std::vector<size_t> ia, ib;
    for (size_t i = 0; i < as.size(); ++i) {
      ia.push_back(job->add(mat(reinterpret_cast<void*>(as[i]), sizeof(T), k, k, lda, true, false)));
      ib.push_back(job->add(mat(reinterpret_cast<void*>(bs[i]), sizeof(T), m, n, ldb, true, true)));
    }
    const CBLAS_SIDE s = side == CUBLAS_SIDE_LEFT ? CblasLeft : CblasRight;
    const CBLAS_UPLO u = uplo == CUBLAS_FILL_MODE_LOWER ? CblasLower : CblasUpper;
    const CBLAS_TRANSPOSE t = trans == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;  // real: C is T
    const CBLAS_DIAG d = diag == CUBLAS_DIAG_UNIT ? CblasUnit : CblasNonUnit;
    job->compute = [=](Job& j) {
      T a = host_alpha;
      if (ialpha != ~size_t(0)) std::memcpy(&a, j.host(ialpha), sizeof(T));
      for (size_t i = 0; i < ia.size(); ++i)
        blas_trsm<T>(s, u, t, d, m, n, a, static_cast<const T*>(j.host(ia[i])), k, static_cast<T*>(j.host(ib[i])), m);
    };
    return queue(h, std::move(job));
  });
}

template <class T>
cublasStatus_t trsm_batched(const char* fn, cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                            cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,
                            const T* const A[], int lda, T* const B[], int ldb, int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  std::vector<uint64_t> as, bs;
  if (cublasStatus_t s = read_pointers(h, A, batch, &as); s != CUBLAS_STATUS_SUCCESS) return s;
  if (cublasStatus_t s = read_pointers(h, B, batch, &bs); s != CUBLAS_STATUS_SUCCESS) return s;
  return trsm<T>(fn, h, side, uplo, trans, diag, m, n, alpha, as, lda, bs, ldb);
}

template <class T>
cublasStatus_t getrf_batched(const char* fn, cublasHandle_t h, int n, T* const A[], int lda, int* P, int* info,
                             int batch) {
  return guarded(fn, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (n < 0 || lda < (n > 1 ? n : 1) || batch < 0 || !info) return CUBLAS_STATUS_INVALID_VALUE;
    std::vector<uint64_t> as;
    if (cublasStatus_t s = read_pointers(h, A, batch, &as); s != CUBLAS_STATUS_SUCCESS) return s;
    if (batch == 0) return CUBLAS_STATUS_SUCCESS;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia;
    for (uint64_t p : as) ia.push_back(job->add(mat(reinterpret_cast<void*>(p), sizeof(T), n, n, lda, true, true)));
    const size_t ip = P ? job->add(vec(P, sizeof(int), int64_t(n) * batch, false, true)) : ~size_t(0);
    const size_t ii = job->add(vec(info, sizeof(int), batch, false, true));
    job->compute = [=](Job& j) {
      int* out = static_cast<int*>(j.host(ii));
      for (size_t b = 0; b < ia.size(); ++b) {
        T* a = static_cast<T*>(j.host(ia[b]));
        if (n == 0) out[b] = 0;
        else if (ip != ~size_t(0)) out[b] = la::getrf(n, n, a, n, static_cast<lapack_int*>(j.host(ip)) + b * size_t(n));
        else out[b] = la::lu_no_pivot<T>(n, n, a, n);
      }
    };
    return queue(h, std::move(job));
  });
}

template <class T>
cublasStatus_t getrs_batched(const char* fn, cublasHandle_t h, cublasOperation_t trans, int n, int nrhs,
                             const T* const A[], int lda, const int* ipiv, T* const B[], int ldb, int* info,
                             int batch) {
  return guarded(fn, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    // The host info names the first bad parameter, as cuBLAS's does.
    *info = trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C ? -1
            : n < 0 ? -2 : nrhs < 0 ? -3 : lda < (n > 1 ? n : 1) ? -5 : ldb < (n > 1 ? n : 1) ? -8 : batch < 0 ? -10 : 0;
    if (*info) return CUBLAS_STATUS_INVALID_VALUE;
    std::vector<uint64_t> as, bs;
    if (cublasStatus_t s = read_pointers(h, A, batch, &as); s != CUBLAS_STATUS_SUCCESS) return s;
    if (cublasStatus_t s = read_pointers(h, B, batch, &bs); s != CUBLAS_STATUS_SUCCESS) return s;
    if (batch == 0 || n == 0 || nrhs == 0) return CUBLAS_STATUS_SUCCESS;
    if (!ipiv) return CUBLAS_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia, ib;
    for (int b = 0; b < batch; ++b) {
      ia.push_back(job->add(mat(reinterpret_cast<void*>(as[b]), sizeof(T), n, n, lda, true, false)));
      ib.push_back(job->add(mat(reinterpret_cast<void*>(bs[b]), sizeof(T), n, nrhs, ldb, true, true)));
    }
    const size_t ip = job->add(vec(ipiv, sizeof(int), int64_t(n) * batch, true, false));
    const char t = trans == CUBLAS_OP_N ? 'N' : 'T';
    job->compute = [=](Job& j) {
      for (size_t b = 0; b < ia.size(); ++b)
        la::getrs(t, n, nrhs, static_cast<const T*>(j.host(ia[b])), n,
                  static_cast<const lapack_int*>(j.host(ip)) + b * size_t(n), static_cast<T*>(j.host(ib[b])), n);
    };
    return queue(h, std::move(job));
  });
}

template <class T>
cublasStatus_t geqrf_batched(const char* fn, cublasHandle_t h, int m, int n, T* const A[], int lda, T* const Tau[],
                             int* info, int batch) {
  return guarded(fn, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    *info = m < 0 ? -1 : n < 0 ? -2 : lda < (m > 1 ? m : 1) ? -4 : batch < 0 ? -7 : 0;
    if (*info) return CUBLAS_STATUS_INVALID_VALUE;
    std::vector<uint64_t> as, ts;
    if (cublasStatus_t s = read_pointers(h, A, batch, &as); s != CUBLAS_STATUS_SUCCESS) return s;
    if (cublasStatus_t s = read_pointers(h, Tau, batch, &ts); s != CUBLAS_STATUS_SUCCESS) return s;
    const int k = m < n ? m : n;
    if (batch == 0 || k == 0) return CUBLAS_STATUS_SUCCESS;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia, it;
    for (int b = 0; b < batch; ++b) {
      ia.push_back(job->add(mat(reinterpret_cast<void*>(as[b]), sizeof(T), m, n, lda, true, true)));
      it.push_back(job->add(vec(reinterpret_cast<void*>(ts[b]), sizeof(T), k, false, true)));
    }
    job->compute = [=](Job& j) {
      for (size_t b = 0; b < ia.size(); ++b)
        la::geqrf(m, n, static_cast<T*>(j.host(ia[b])), m, static_cast<T*>(j.host(it[b])));
    };
    return queue(h, std::move(job));
  });
}

template <class T>
cublasStatus_t gels_batched(const char* fn, cublasHandle_t h, cublasOperation_t trans, int m, int n, int nrhs,
                            T* const A[], int lda, T* const C[], int ldc, int* info, int* dev_info, int batch) {
  return guarded(fn, [&]() -> cublasStatus_t {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    // cuBLAS solves only the overdetermined, untransposed case.
    *info = trans != CUBLAS_OP_N ? -1 : m < 0 ? -2 : n < 0 || n > m ? -3 : nrhs < 0 ? -4
            : lda < (m > 1 ? m : 1) ? -6 : ldc < (m > 1 ? m : 1) ? -8 : batch < 0 ? -11 : 0;
    if (*info) return CUBLAS_STATUS_INVALID_VALUE;
    std::vector<uint64_t> as, cs;
    if (cublasStatus_t s = read_pointers(h, A, batch, &as); s != CUBLAS_STATUS_SUCCESS) return s;
    if (cublasStatus_t s = read_pointers(h, C, batch, &cs); s != CUBLAS_STATUS_SUCCESS) return s;
    if (batch == 0) return CUBLAS_STATUS_SUCCESS;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia, ic;
    for (int b = 0; b < batch; ++b) {
      ia.push_back(job->add(mat(reinterpret_cast<void*>(as[b]), sizeof(T), m, n, lda, true, true)));
      ic.push_back(job->add(mat(reinterpret_cast<void*>(cs[b]), sizeof(T), m, nrhs, ldc, true, true)));
    }
    const size_t ii = dev_info ? job->add(vec(dev_info, sizeof(int), batch, false, true)) : ~size_t(0);
    job->compute = [=](Job& j) {
      for (size_t b = 0; b < ia.size(); ++b) {
        lapack_int r = m && n && nrhs ? la::gels('N', m, n, nrhs, static_cast<T*>(j.host(ia[b])), la::ld_of(m),
                                                 static_cast<T*>(j.host(ic[b])), la::ld_of(m))
                                      : 0;
        if (ii != ~size_t(0)) static_cast<int*>(j.host(ii))[b] = int(r);
      }
    };
    return queue(h, std::move(job));
  });
}

}  // namespace
}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

#define RGPU_SOLVE(P, T)                                                                                               \
  RGPU_EXPORT cublasStatus_t cublas##P##trsm_v2(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,        \
                                                cublasOperation_t trans, cublasDiagType_t diag, int m, int n,          \
                                                const T* alpha, const T* A, int lda, T* B, int ldb) {                  \
    return trsm<T>("cublas" #P "trsm_v2", h, side, uplo, trans, diag, m, n, alpha,                                     \
                   {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(A))}, lda,                                       \
                   {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(B))}, ldb);                                      \
  }                                                                                                                    \
  RGPU_EXPORT cublasStatus_t cublas##P##trsmBatched(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,    \
                                                    cublasOperation_t trans, cublasDiagType_t diag, int m, int n,      \
                                                    const T* alpha, const T* const A[], int lda, T* const B[],         \
                                                    int ldb, int batch) {                                              \
    return trsm_batched<T>("cublas" #P "trsmBatched", h, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, batch); \
  }                                                                                                                    \
  RGPU_EXPORT cublasStatus_t cublas##P##getrfBatched(cublasHandle_t h, int n, T* const A[], int lda, int* P_,          \
                                                     int* info, int batch) {                                           \
    return getrf_batched<T>("cublas" #P "getrfBatched", h, n, A, lda, P_, info, batch);                                \
  }                                                                                                                    \
  RGPU_EXPORT cublasStatus_t cublas##P##getrsBatched(cublasHandle_t h, cublasOperation_t trans, int n, int nrhs,       \
                                                     const T* const A[], int lda, const int* ipiv, T* const B[],       \
                                                     int ldb, int* info, int batch) {                                  \
    return getrs_batched<T>("cublas" #P "getrsBatched", h, trans, n, nrhs, A, lda, ipiv, B, ldb, info, batch);         \
  }                                                                                                                    \
  RGPU_EXPORT cublasStatus_t cublas##P##geqrfBatched(cublasHandle_t h, int m, int n, T* const A[], int lda,            \
                                                     T* const Tau[], int* info, int batch) {                           \
    return geqrf_batched<T>("cublas" #P "geqrfBatched", h, m, n, A, lda, Tau, info, batch);                            \
  }                                                                                                                    \
  RGPU_EXPORT cublasStatus_t cublas##P##gelsBatched(cublasHandle_t h, cublasOperation_t trans, int m, int n, int nrhs, \
                                                    T* const A[], int lda, T* const C[], int ldc, int* info,           \
                                                    int* dev_info, int batch) {                                        \
    return gels_batched<T>("cublas" #P "gelsBatched", h, trans, m, n, nrhs, A, lda, C, ldc, info, dev_info, batch);    \
  }

RGPU_SOLVE(S, float)
RGPU_SOLVE(D, double)
