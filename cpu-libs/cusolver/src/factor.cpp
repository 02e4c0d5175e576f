// cuSOLVER's factorizations and solves (potrf, potrs and their batched forms,
// getrf, getrs, geqrf, orgqr, ormqr, sytrf), S and D: staged through a Job
// and computed with LAPACK on the host copies, in stream order. devInfo is
// written as LAPACK's info. No device workspace is used: every _bufferSize
// answers 0.
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "api.h"
#include "lapack.h"

namespace rgpu::cpusolver {
namespace {

namespace la = rgpu::cpulapack;

bool fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

void put_info(Job& j, size_t i, lapack_int info) {
  int v = static_cast<int>(info);
  std::memcpy(j.host(i), &v, sizeof v);
}

template <class T>
cusolverStatus_t potrf(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, T* A, int64_t lda,
                       int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!u || !fits(n) || lda < (n > 1 ? n : 1) || !info) return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, n ? la::potrf(u, lapack_int(n), static_cast<T*>(j.host(ia)), la::ld_of(n)) : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t potrs(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                       const T* A, int64_t lda, T* B, int64_t ldb, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!u || !fits(n) || !fits(nrhs) || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, false));
    const size_t ib = job->add(matrix(B, sizeof(T), n, nrhs, ldb, true, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, n && nrhs ? la::potrs(u, lapack_int(n), lapack_int(nrhs), static_cast<const T*>(j.host(ia)),
                                            la::ld_of(n), static_cast<T*>(j.host(ib)), la::ld_of(n))
                                : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t potrf_batched(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* Aarray[],
                               int lda, int* infos, int batch) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!u || n < 0 || lda < (n > 1 ? n : 1) || batch < 0 || !infos) return CUSOLVER_STATUS_INVALID_VALUE;
    std::vector<uint64_t> ptrs;
    if (cusolverStatus_t s = read_pointers(h, Aarray, batch, &ptrs); s != CUSOLVER_STATUS_SUCCESS) return s;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia;
    for (uint64_t p : ptrs) ia.push_back(job->add(matrix(reinterpret_cast<void*>(p), sizeof(T), n, n, lda, true, true)));
    const size_t ii = job->add(vector(infos, sizeof(int), batch, false, true));
    job->compute = [=](Job& j) {
      int* out = static_cast<int*>(j.host(ii));
      for (size_t b = 0; b < ia.size(); ++b)
        out[b] = n ? int(la::potrf(u, n, static_cast<T*>(j.host(ia[b])), la::ld_of(n))) : 0;
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t potrs_batched(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int n, int nrhs,
                               T* Aarray[], int lda, T* Barray[], int ldb, int* info, int batch) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    // cuSOLVER supports one right-hand side per matrix here.
    if (!u || n < 0 || nrhs != 1 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || batch < 0 || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    std::vector<uint64_t> pa, pb;
    if (cusolverStatus_t s = read_pointers(h, Aarray, batch, &pa); s != CUSOLVER_STATUS_SUCCESS) return s;
    if (cusolverStatus_t s = read_pointers(h, Barray, batch, &pb); s != CUSOLVER_STATUS_SUCCESS) return s;
    auto job = std::make_unique<Job>();
    std::vector<size_t> ia, ib;
    for (int b = 0; b < batch; ++b) {
      ia.push_back(job->add(matrix(reinterpret_cast<void*>(pa[b]), sizeof(T), n, n, lda, true, false)));
      ib.push_back(job->add(matrix(reinterpret_cast<void*>(pb[b]), sizeof(T), n, nrhs, ldb, true, true)));
    }
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      lapack_int first = 0;
      for (size_t b = 0; b < ia.size() && n; ++b) {
        lapack_int r = la::potrs(u, n, nrhs, static_cast<const T*>(j.host(ia[b])), la::ld_of(n),
                                 static_cast<T*>(j.host(ib[b])), la::ld_of(n));
        if (r && !first) first = r;
      }
      put_info(j, ii, first);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t getrf(const char* fn, cusolverDnHandle_t h, int m, int n, T* A, int lda, int* ipiv, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || !info) return CUSOLVER_STATUS_INVALID_VALUE;
    const int k = m < n ? m : n;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, true));
    const size_t ip = ipiv ? job->add(vector(ipiv, sizeof(int), k, false, true)) : ~size_t(0);
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      T* a = static_cast<T*>(j.host(ia));
      lapack_int r = 0;
      if (k == 0) r = 0;
      else if (ip != ~size_t(0)) r = la::getrf(m, n, a, la::ld_of(m), static_cast<lapack_int*>(j.host(ip)));
      else r = la::lu_no_pivot<T>(m, n, a, la::ld_of(m));
      put_info(j, ii, r);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t getrs(const char* fn, cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs, const T* A,
                       int lda, const int* ipiv, T* B, int ldb, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char t = trans_char(trans);
    if (!t || n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || !ipiv || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, false));
    const size_t ip = job->add(vector(ipiv, sizeof(int), n, true, false));
    const size_t ib = job->add(matrix(B, sizeof(T), n, nrhs, ldb, true, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, n && nrhs ? la::getrs(t, n, nrhs, static_cast<const T*>(j.host(ia)), la::ld_of(n),
                                            static_cast<const lapack_int*>(j.host(ip)), static_cast<T*>(j.host(ib)),
                                            la::ld_of(n))
                                : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t geqrf(const char* fn, cusolverDnHandle_t h, int64_t m, int64_t n, T* A, int64_t lda, T* tau,
                       int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (!fits(m) || !fits(n) || lda < (m > 1 ? m : 1) || !info) return CUSOLVER_STATUS_INVALID_VALUE;
    const int64_t k = m < n ? m : n;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, true));
    const size_t it = job->add(vector(tau, sizeof(T), k, false, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, k ? la::geqrf(lapack_int(m), lapack_int(n), static_cast<T*>(j.host(ia)), la::ld_of(m),
                                    static_cast<T*>(j.host(it)))
                        : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t orgqr(const char* fn, cusolverDnHandle_t h, int m, int n, int k, T* A, int lda, const T* tau,
                       int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || n > m || k < 0 || k > n || lda < (m > 1 ? m : 1) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, true));
    const size_t it = job->add(vector(tau, sizeof(T), k, true, false));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, n ? la::orgqr(m, n, k, static_cast<T*>(j.host(ia)), la::ld_of(m),
                                    static_cast<const T*>(j.host(it)))
                        : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t ormqr(const char* fn, cusolverDnHandle_t h, cublasSideMode_t side, cublasOperation_t trans, int m,
                       int n, int k, const T* A, int lda, const T* tau, T* C, int ldc, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char s = side == CUBLAS_SIDE_LEFT ? 'L' : (side == CUBLAS_SIDE_RIGHT ? 'R' : 0);
    // A real Q: the conjugate transpose is the transpose.
    const char t = trans == CUBLAS_OP_N ? 'N' : (trans == CUBLAS_OP_T || trans == CUBLAS_OP_C ? 'T' : 0);
    const int rows_a = s == 'L' ? m : n;
    if (!s || !t || m < 0 || n < 0 || k < 0 || k > rows_a || lda < (rows_a > 1 ? rows_a : 1) ||
        ldc < (m > 1 ? m : 1) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), rows_a, k, lda, true, false));
    const size_t it = job->add(vector(tau, sizeof(T), k, true, false));
    const size_t ic = job->add(matrix(C, sizeof(T), m, n, ldc, true, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, m && n ? la::ormqr(s, t, m, n, k, static_cast<const T*>(j.host(ia)), la::ld_of(rows_a),
                                         static_cast<const T*>(j.host(it)), static_cast<T*>(j.host(ic)), la::ld_of(m))
                             : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t sytrf(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* A, int lda, int* ipiv,
                       int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!u || n < 0 || lda < (n > 1 ? n : 1) || !ipiv || !info) return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, true));
    const size_t ip = job->add(vector(ipiv, sizeof(int), n, false, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, n ? la::sytrf(u, n, static_cast<T*>(j.host(ia)), la::ld_of(n),
                                    static_cast<lapack_int*>(j.host(ip)))
                        : 0);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t sytrs64(const char* fn, cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                         const T* A, int64_t lda, const int64_t* ipiv, T* B, int64_t ldb, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!u || !fits(n) || !fits(nrhs) || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || !ipiv || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, false));
    const size_t ip = job->add(vector(ipiv, sizeof(int64_t), n, true, false));
    const size_t ib = job->add(matrix(B, sizeof(T), n, nrhs, ldb, true, true));
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      if (!n || !nrhs) return put_info(j, ii, 0);
      const int64_t* p64 = static_cast<const int64_t*>(j.host(ip));
      std::vector<lapack_int> p(p64, p64 + n);
      put_info(j, ii, la::sytrs(u, lapack_int(n), lapack_int(nrhs), static_cast<const T*>(j.host(ia)), la::ld_of(n),
                                p.data(), static_cast<T*>(j.host(ib)), la::ld_of(n)));
    };
    return submit(h, std::move(job));
  });
}

// The 64-bit API's element types: float or double, with the same compute type.
template <class F>
cusolverStatus_t by_type(cudaDataType a, cudaDataType b, cudaDataType c, F&& f) {
  if (a != b || a != c) return CUSOLVER_STATUS_NOT_SUPPORTED;
  if (a == CUDA_R_32F) return f(float{});
  if (a == CUDA_R_64F) return f(double{});
  return CUSOLVER_STATUS_NOT_SUPPORTED;
}

cusolverStatus_t x_potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, cudaDataType ta, void* A,
                         int64_t lda, cudaDataType tc, int* info) {
  return by_type(ta, ta, tc, [&](auto t) {
    using T = decltype(t);
    return potrf<T>("cusolverDnXpotrf", h, uplo, n, static_cast<T*>(A), lda, info);
  });
}
cusolverStatus_t x_potrs(cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, int64_t nrhs, cudaDataType ta,
                         const void* A, int64_t lda, cudaDataType tb, void* B, int64_t ldb, int* info) {
  return by_type(ta, tb, ta, [&](auto t) {
    using T = decltype(t);
    return potrs<T>("cusolverDnXpotrs", h, uplo, n, nrhs, static_cast<const T*>(A), lda, static_cast<T*>(B), ldb,
                    info);
  });
}
cusolverStatus_t x_geqrf(cusolverDnHandle_t h, int64_t m, int64_t n, cudaDataType ta, void* A, int64_t lda,
                         cudaDataType tt, void* tau, cudaDataType tc, int* info) {
  return by_type(ta, tt, tc, [&](auto t) {
    using T = decltype(t);
    return geqrf<T>("cusolverDnXgeqrf", h, m, n, static_cast<T*>(A), lda, static_cast<T*>(tau), info);
  });
}
cusolverStatus_t x_sytrs(cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, int64_t nrhs, cudaDataType ta,
                         const void* A, int64_t lda, const int64_t* ipiv, cudaDataType tb, void* B, int64_t ldb,
                         int* info) {
  return by_type(ta, tb, ta, [&](auto t) {
    using T = decltype(t);
    return sytrs64<T>("cusolverDnXsytrs", h, uplo, n, nrhs, static_cast<const T*>(A), lda, ipiv, static_cast<T*>(B),
                      ldb, info);
  });
}

}  // namespace
}  // namespace rgpu::cpusolver

using namespace rgpu::cpusolver;

#define RGPU_FACTOR(P, T)                                                                                            \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##potrf_bufferSize(cusolverDnHandle_t h, cublasFillMode_t, int, T*, int, \
                                                               int* lwork) {                                         \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* A,        \
                                                    int lda, T*, int, int* info) {                                   \
    return potrf<T>("cusolverDn" #P "potrf", h, uplo, n, A, lda, info);                                              \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##potrs(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, int nrhs,    \
                                                    const T* A, int lda, T* B, int ldb, int* info) {                 \
    return potrs<T>("cusolverDn" #P "potrs", h, uplo, n, nrhs, A, lda, B, ldb, info);                                \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##potrfBatched(cusolverDnHandle_t h, cublasFillMode_t uplo, int n,       \
                                                           T* Aarray[], int lda, int* infos, int batch) {            \
    return potrf_batched<T>("cusolverDn" #P "potrfBatched", h, uplo, n, Aarray, lda, infos, batch);                  \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##potrsBatched(cusolverDnHandle_t h, cublasFillMode_t uplo, int n,       \
                                                           int nrhs, T* A[], int lda, T* B[], int ldb, int* info,    \
                                                           int batch) {                                              \
    return potrs_batched<T>("cusolverDn" #P "potrsBatched", h, uplo, n, nrhs, A, lda, B, ldb, info, batch);          \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##getrf_bufferSize(cusolverDnHandle_t h, int, int, T*, int, int* lwork) { \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##getrf(cusolverDnHandle_t h, int m, int n, T* A, int lda, T*,           \
                                                    int* ipiv, int* info) {                                          \
    return getrf<T>("cusolverDn" #P "getrf", h, m, n, A, lda, ipiv, info);                                           \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##getrs(cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs,  \
                                                    const T* A, int lda, const int* ipiv, T* B, int ldb, int* info) { \
    return getrs<T>("cusolverDn" #P "getrs", h, trans, n, nrhs, A, lda, ipiv, B, ldb, info);                         \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##geqrf_bufferSize(cusolverDnHandle_t h, int, int, T*, int, int* lwork) { \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##geqrf(cusolverDnHandle_t h, int m, int n, T* A, int lda, T* tau, T*,   \
                                                    int, int* info) {                                                \
    return geqrf<T>("cusolverDn" #P "geqrf", h, m, n, A, lda, tau, info);                                            \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##orgqr_bufferSize(cusolverDnHandle_t h, int, int, int, const T*, int,   \
                                                               const T*, int* lwork) {                               \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##orgqr(cusolverDnHandle_t h, int m, int n, int k, T* A, int lda,        \
                                                    const T* tau, T*, int, int* info) {                              \
    return orgqr<T>("cusolverDn" #P "orgqr", h, m, n, k, A, lda, tau, info);                                         \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##ormqr_bufferSize(cusolverDnHandle_t h, cublasSideMode_t,               \
                                                               cublasOperation_t, int, int, int, const T*, int,      \
                                                               const T*, const T*, int, int* lwork) {                \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##ormqr(cusolverDnHandle_t h, cublasSideMode_t side,                     \
                                                    cublasOperation_t trans, int m, int n, int k, const T* A,        \
                                                    int lda, const T* tau, T* C, int ldc, T*, int, int* info) {      \
    return ormqr<T>("cusolverDn" #P "ormqr", h, side, trans, m, n, k, A, lda, tau, C, ldc, info);                    \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##sytrf_bufferSize(cusolverDnHandle_t h, int, T*, int, int* lwork) {     \
    return no_workspace(h, lwork);                                                                                   \
  }                                                                                                                  \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##sytrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* A,        \
                                                    int lda, int* ipiv, T*, int, int* info) {                        \
    return sytrf<T>("cusolverDn" #P "sytrf", h, uplo, n, A, lda, ipiv, info);                                        \
  }

RGPU_FACTOR(S, float)
RGPU_FACTOR(D, double)

RGPU_EXPORT cusolverStatus_t cusolverDnXpotrf_bufferSize(cusolverDnHandle_t h, cusolverDnParams_t, cublasFillMode_t,
                                                         int64_t, cudaDataType, const void*, int64_t, cudaDataType,
                                                         size_t* device, size_t* host) {
  return no_workspace_64(h, device, host);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXpotrf(cusolverDnHandle_t h, cusolverDnParams_t, cublasFillMode_t uplo,
                                              int64_t n, cudaDataType ta, void* A, int64_t lda, cudaDataType tc,
                                              void*, size_t, void*, size_t, int* info) {
  return x_potrf(h, uplo, n, ta, A, lda, tc, info);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXpotrs(cusolverDnHandle_t h, cusolverDnParams_t, cublasFillMode_t uplo,
                                              int64_t n, int64_t nrhs, cudaDataType ta, const void* A, int64_t lda,
                                              cudaDataType tb, void* B, int64_t ldb, int* info) {
  return x_potrs(h, uplo, n, nrhs, ta, A, lda, tb, B, ldb, info);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXgeqrf_bufferSize(cusolverDnHandle_t h, cusolverDnParams_t, int64_t, int64_t,
                                                         cudaDataType, const void*, int64_t, cudaDataType,
                                                         const void*, cudaDataType, size_t* device, size_t* host) {
  return no_workspace_64(h, device, host);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXgeqrf(cusolverDnHandle_t h, cusolverDnParams_t, int64_t m, int64_t n,
                                              cudaDataType ta, void* A, int64_t lda, cudaDataType tt, void* tau,
                                              cudaDataType tc, void*, size_t, void*, size_t, int* info) {
  return x_geqrf(h, m, n, ta, A, lda, tt, tau, tc, info);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXsytrs_bufferSize(cusolverDnHandle_t h, cublasFillMode_t, int64_t, int64_t,
                                                         cudaDataType, const void*, int64_t, const int64_t*,
                                                         cudaDataType, void*, int64_t, size_t* device, size_t* host) {
  return no_workspace_64(h, device, host);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXsytrs(cusolverDnHandle_t h, cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                                              cudaDataType ta, const void* A, int64_t lda, const int64_t* ipiv,
                                              cudaDataType tb, void* B, int64_t ldb, void*, size_t, void*, size_t,
                                              int* info) {
  return x_sytrs(h, uplo, n, nrhs, ta, A, lda, ipiv, tb, B, ldb, info);
}
