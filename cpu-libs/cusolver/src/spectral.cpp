// cuSOLVER's singular value and symmetric eigenvalue decompositions (gesvd,
// gesvdj and its batch, gesvdaStridedBatched, syevd, syevj and its batch,
// Xsyevd), S and D, with LAPACK's gesvd and syevd on the host copies in
// stream order. The Jacobi variants get LAPACK's direct results: the same
// decomposition to working precision, sorted as cuSOLVER sorts by default.
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "api.h"
#include "lapack.h"

namespace rgpu::cpusolver {

namespace {

namespace la = rgpu::cpulapack;

constexpr size_t kNone = ~size_t(0);

bool is_jobz(cusolverEigMode_t j) { return j == CUSOLVER_EIG_MODE_NOVECTOR || j == CUSOLVER_EIG_MODE_VECTOR; }

// The SVD of the m x n compact matrix `a` (destroyed): s (min(m,n)), and
// when `vectors`, U (m x ucols) and V (n x vcols, V not V^T), each the
// leading columns of the full factors (ucols, vcols <= max needed).
template <class T>
lapack_int svd(int m, int n, T* a, T* s, bool vectors, int ucols, T* u, int vcols, T* v, T* superb) {
  const int k = m < n ? m : n;
  if (k == 0) return 0;
  const bool full_u = ucols > k, full_v = vcols > k;
  const char ju = !vectors ? 'N' : (full_u ? 'A' : 'S');
  const char jv = !vectors ? 'N' : (full_v ? 'A' : 'S');
  const int ur = vectors ? (full_u ? m : k) : 1;
  const int vr = vectors ? (full_v ? n : k) : 1;
  std::vector<T> uu(vectors ? size_t(m) * ur : 1), vt(vectors ? size_t(vr) * n : 1), sb(k > 1 ? k - 1 : 1);
  lapack_int r = la::gesvd(ju, jv, m, n, a, la::ld_of(m), s, uu.data(), la::ld_of(m), vt.data(), la::ld_of(vr),
                           sb.data());
  if (superb) std::memcpy(superb, sb.data(), sizeof(T) * size_t(k > 1 ? k - 1 : 0));
  if (!vectors) return r;
  std::memcpy(u, uu.data(), sizeof(T) * size_t(m) * size_t(ucols));
  for (int c = 0; c < vcols; ++c)
    for (int i = 0; i < n; ++i) v[i + size_t(c) * n] = vt[c + size_t(i) * vr];
  return r;
}

void put_info(Job& j, size_t i, lapack_int info) {
  int v = static_cast<int>(info);
  std::memcpy(j.host(i), &v, sizeof v);
}

template <class T>
cusolverStatus_t gesvd(const char* fn, cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, int n, T* A,
                       int lda, T* S, T* U, int ldu, T* VT, int ldvt, T* rwork, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const int k = m < n ? m : n;
    auto cols = [&](signed char j, int full) { return j == 'A' ? full : (j == 'S' ? k : (j == 'N' || j == 'O' ? 0 : -1)); };
    const int ucols = cols(jobu, m), vtrows = cols(jobvt, n);
    if (m < 0 || n < 0 || ucols < 0 || vtrows < 0 || (jobu == 'O' && jobvt == 'O') || lda < (m > 1 ? m : 1) ||
        (ucols && ldu < (m > 1 ? m : 1)) || (vtrows && ldvt < (vtrows > 1 ? vtrows : 1)) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, true));
    const size_t is = job->add(vector(S, sizeof(T), k, false, true));
    const size_t iu = ucols ? job->add(matrix(U, sizeof(T), m, ucols, ldu, false, true)) : kNone;
    const size_t iv = vtrows ? job->add(matrix(VT, sizeof(T), vtrows, n, ldvt, false, true)) : kNone;
    const size_t ir = rwork && k > 1 ? job->add(vector(rwork, sizeof(T), k - 1, false, true)) : kNone;
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    const char ju = char(jobu), jv = char(jobvt);
    job->compute = [=](Job& j) {
      if (k == 0) return put_info(j, ii, 0);
      T dummy[1];
      std::vector<T> sb(k > 1 ? k - 1 : 1);
      lapack_int r = la::gesvd(ju, jv, m, n, static_cast<T*>(j.host(ia)), la::ld_of(m), static_cast<T*>(j.host(is)),
                               iu != kNone ? static_cast<T*>(j.host(iu)) : dummy, la::ld_of(m),
                               iv != kNone ? static_cast<T*>(j.host(iv)) : dummy, la::ld_of(vtrows), sb.data());
      if (ir != kNone) std::memcpy(j.host(ir), sb.data(), sizeof(T) * size_t(k - 1));
      put_info(j, ii, r);
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t gesvdj(const char* fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n, T* A,
                        int lda, T* S, T* U, int ldu, T* V, int ldv, int* info) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const int k = m < n ? m : n;
    const bool vec = jobz == CUSOLVER_EIG_MODE_VECTOR;
    const int ucols = vec ? (econ ? k : m) : 0, vcols = vec ? (econ ? k : n) : 0;
    if (!is_jobz(jobz) || m < 0 || n < 0 || lda < (m > 1 ? m : 1) || (vec && ldu < (m > 1 ? m : 1)) ||
        (vec && ldv < (n > 1 ? n : 1)) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, false));
    const size_t is = job->add(vector(S, sizeof(T), k, false, true));
    const size_t iu = vec ? job->add(matrix(U, sizeof(T), m, ucols, ldu, false, true)) : kNone;
    const size_t iv = vec ? job->add(matrix(V, sizeof(T), n, vcols, ldv, false, true)) : kNone;
    const size_t ii = job->add(vector(info, sizeof(int), 1, false, true));
    job->compute = [=](Job& j) {
      put_info(j, ii, svd<T>(m, n, static_cast<T*>(j.host(ia)), static_cast<T*>(j.host(is)), vec, ucols,
                             vec ? static_cast<T*>(j.host(iu)) : nullptr, vcols,
                             vec ? static_cast<T*>(j.host(iv)) : nullptr, nullptr));
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t gesvdj_batched(const char* fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, int m, int n, T* A,
                                int lda, T* S, T* U, int ldu, T* V, int ldv, int* info, int batch) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const int k = m < n ? m : n;
    const bool vec = jobz == CUSOLVER_EIG_MODE_VECTOR;
    if (!is_jobz(jobz) || m < 0 || n < 0 || batch < 0 || lda < (m > 1 ? m : 1) || (vec && ldu < (m > 1 ? m : 1)) ||
        (vec && ldv < (n > 1 ? n : 1)) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, false, int64_t(lda) * n, batch));
    const size_t is = job->add(matrix(S, sizeof(T), k, 1, k, false, true, k, batch));
    const size_t iu = vec ? job->add(matrix(U, sizeof(T), m, m, ldu, false, true, int64_t(ldu) * m, batch)) : kNone;
    const size_t iv = vec ? job->add(matrix(V, sizeof(T), n, n, ldv, false, true, int64_t(ldv) * n, batch)) : kNone;
    const size_t ii = job->add(vector(info, sizeof(int), batch, false, true));
    job->compute = [=](Job& j) {
      int* out = static_cast<int*>(j.host(ii));
      for (int b = 0; b < batch; ++b) {
        out[b] = int(svd<T>(m, n, static_cast<T*>(j.host(ia)) + size_t(b) * m * n,
                            static_cast<T*>(j.host(is)) + size_t(b) * k, vec, m,
                            vec ? static_cast<T*>(j.host(iu)) + size_t(b) * m * m : nullptr, n,
                            vec ? static_cast<T*>(j.host(iv)) + size_t(b) * n * n : nullptr, nullptr));
      }
    };
    return submit(h, std::move(job));
  });
}

template <class T>
cusolverStatus_t gesvda(const char* fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, int rank, int m, int n,
                        const T* A, int lda, long long sA, T* S, long long sS, T* U, int ldu, long long sU, T* V,
                        int ldv, long long sV, int* info, double* h_R_nrmF, int batch) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const int k = m < n ? m : n;
    const bool vec = jobz == CUSOLVER_EIG_MODE_VECTOR;
    if (!is_jobz(jobz) || m < 0 || n < 0 || rank < 1 || rank > k || batch < 0 || lda < (m > 1 ? m : 1) ||
        (vec && ldu < (m > 1 ? m : 1)) || (vec && ldv < (n > 1 ? n : 1)) || sA < 0 || sS < 0 || sU < 0 || sV < 0 ||
        !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), m, n, lda, true, false, sA, batch));
    const size_t is = job->add(matrix(S, sizeof(T), rank, 1, rank, false, true, sS, batch));
    const size_t iu = vec ? job->add(matrix(U, sizeof(T), m, rank, ldu, false, true, sU, batch)) : kNone;
    const size_t iv = vec ? job->add(matrix(V, sizeof(T), n, rank, ldv, false, true, sV, batch)) : kNone;
    const size_t ii = job->add(vector(info, sizeof(int), batch, false, true));
    auto residuals = std::make_shared<std::vector<double>>(size_t(batch));
    job->compute = [=](Job& j) {
      int* out = static_cast<int*>(j.host(ii));
      std::vector<T> s(k), u(size_t(m) * rank), v(size_t(n) * rank);
      for (int b = 0; b < batch; ++b) {
        std::vector<T> a(static_cast<const T*>(j.host(ia)) + size_t(b) * m * n,
                         static_cast<const T*>(j.host(ia)) + size_t(b + 1) * m * n);
        out[b] = int(svd<T>(m, n, a.data(), s.data(), true, rank, u.data(), rank, v.data(), nullptr));
        std::memcpy(static_cast<T*>(j.host(is)) + size_t(b) * rank, s.data(), sizeof(T) * size_t(rank));
        if (vec) {
          std::memcpy(static_cast<T*>(j.host(iu)) + size_t(b) * m * rank, u.data(), sizeof(T) * u.size());
          std::memcpy(static_cast<T*>(j.host(iv)) + size_t(b) * n * rank, v.data(), sizeof(T) * v.size());
        }
        double rest = 0;  // ||A - U S V^T||_F: the singular values left out
        for (int i = rank; i < k; ++i) rest += double(s[i]) * double(s[i]);
        (*residuals)[size_t(b)] = std::sqrt(rest);
      }
    };
    if (cusolverStatus_t st = submit(h, std::move(job)); st != CUSOLVER_STATUS_SUCCESS) return st;
    if (!h_R_nrmF) return CUSOLVER_STATUS_SUCCESS;
    // The norms are a host result: wait for them, as cuSOLVER does.
    if (cusolverStatus_t st = wait(h); st != CUSOLVER_STATUS_SUCCESS) return st;
    std::memcpy(h_R_nrmF, residuals->data(), sizeof(double) * residuals->size());
    return CUSOLVER_STATUS_SUCCESS;
  });
}

template <class T>
cusolverStatus_t syevd(const char* fn, cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo, int64_t n,
                       T* A, int64_t lda, T* W, int* info, int64_t batch = 1, bool strided = false) {
  return guarded(fn, [&]() -> cusolverStatus_t {
    if (!h) return CUSOLVER_STATUS_NOT_INITIALIZED;
    const char u = uplo_char(uplo);
    if (!is_jobz(jobz) || !u || n < 0 || n > INT_MAX || batch < 0 || lda < (n > 1 ? n : 1) || !info)
      return CUSOLVER_STATUS_INVALID_VALUE;
    const char jz = jobz == CUSOLVER_EIG_MODE_VECTOR ? 'V' : 'N';
    auto job = std::make_unique<Job>();
    const size_t ia = job->add(matrix(A, sizeof(T), n, n, lda, true, true, strided ? lda * n : 0, batch));
    const size_t iw = job->add(matrix(W, sizeof(T), n, 1, n, false, true, strided ? n : 0, batch));
    const size_t ii = job->add(vector(info, sizeof(int), batch, false, true));
    job->compute = [=](Job& j) {
      int* out = static_cast<int*>(j.host(ii));
      for (int64_t b = 0; b < batch; ++b) {
        out[b] = n ? int(la::syevd(jz, u, lapack_int(n), static_cast<T*>(j.host(ia)) + size_t(b) * n * n,
                                   la::ld_of(n), static_cast<T*>(j.host(iw)) + size_t(b) * n))
                   : 0;
      }
    };
    return submit(h, std::move(job));
  });
}

}  // namespace
}  // namespace rgpu::cpusolver

using namespace rgpu::cpusolver;

#define RGPU_SPECTRAL(P, T)                                                                                           \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvd_bufferSize(cusolverDnHandle_t h, int, int, int* lwork) {          \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvd(cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, \
                                                    int n, T* A, int lda, T* S, T* U, int ldu, T* VT, int ldvt, T*,   \
                                                    int, T* rwork, int* info) {                                       \
    return gesvd<T>("cusolverDn" #P "gesvd", h, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, rwork, info);         \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdj_bufferSize(cusolverDnHandle_t h, cusolverEigMode_t, int, int,    \
                                                                int, const T*, int, const T*, const T*, int,          \
                                                                const T*, int, int* lwork, gesvdjInfo_t) {            \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdj(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m,   \
                                                     int n, T* A, int lda, T* S, T* U, int ldu, T* V, int ldv, T*,    \
                                                     int, int* info, gesvdjInfo_t) {                                  \
    return gesvdj<T>("cusolverDn" #P "gesvdj", h, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, info);                 \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdjBatched_bufferSize(                                               \
      cusolverDnHandle_t h, cusolverEigMode_t, int, int, const T*, int, const T*, const T*, int, const T*, int,       \
      int* lwork, gesvdjInfo_t, int) {                                                                                \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdjBatched(cusolverDnHandle_t h, cusolverEigMode_t jobz, int m,      \
                                                            int n, T* A, int lda, T* S, T* U, int ldu, T* V, int ldv, \
                                                            T*, int, int* info, gesvdjInfo_t, int batch) {            \
    return gesvdj_batched<T>("cusolverDn" #P "gesvdjBatched", h, jobz, m, n, A, lda, S, U, ldu, V, ldv, info, batch); \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdaStridedBatched_bufferSize(                                        \
      cusolverDnHandle_t h, cusolverEigMode_t, int, int, int, const T*, int, long long, const T*, long long,          \
      const T*, int, long long, const T*, int, long long, int* lwork, int) {                                          \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##gesvdaStridedBatched(                                                   \
      cusolverDnHandle_t h, cusolverEigMode_t jobz, int rank, int m, int n, const T* A, int lda, long long sA, T* S,  \
      long long sS, T* U, int ldu, long long sU, T* V, int ldv, long long sV, T*, int, int* info, double* nrm,        \
      int batch) {                                                                                                    \
    return gesvda<T>("cusolverDn" #P "gesvdaStridedBatched", h, jobz, rank, m, n, A, lda, sA, S, sS, U, ldu, sU, V,   \
                     ldv, sV, info, nrm, batch);                                                                      \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevd_bufferSize(cusolverDnHandle_t h, cusolverEigMode_t,               \
                                                               cublasFillMode_t, int, const T*, int, const T*,        \
                                                               int* lwork) {                                          \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevd(cusolverDnHandle_t h, cusolverEigMode_t jobz,                     \
                                                    cublasFillMode_t uplo, int n, T* A, int lda, T* W, T*, int,       \
                                                    int* info) {                                                      \
    return syevd<T>("cusolverDn" #P "syevd", h, jobz, uplo, n, A, lda, W, info);                                      \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevj_bufferSize(cusolverDnHandle_t h, cusolverEigMode_t,               \
                                                               cublasFillMode_t, int, const T*, int, const T*,        \
                                                               int* lwork, syevjInfo_t) {                             \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevj(cusolverDnHandle_t h, cusolverEigMode_t jobz,                     \
                                                    cublasFillMode_t uplo, int n, T* A, int lda, T* W, T*, int,       \
                                                    int* info, syevjInfo_t) {                                         \
    return syevd<T>("cusolverDn" #P "syevj", h, jobz, uplo, n, A, lda, W, info);                                      \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevjBatched_bufferSize(cusolverDnHandle_t h, cusolverEigMode_t,        \
                                                                      cublasFillMode_t, int, const T*, int, const T*, \
                                                                      int* lwork, syevjInfo_t, int) {                 \
    return no_workspace(h, lwork);                                                                                    \
  }                                                                                                                   \
  RGPU_EXPORT cusolverStatus_t cusolverDn##P##syevjBatched(cusolverDnHandle_t h, cusolverEigMode_t jobz,              \
                                                           cublasFillMode_t uplo, int n, T* A, int lda, T* W, T*,     \
                                                           int, int* info, syevjInfo_t, int batch) {                  \
    return syevd<T>("cusolverDn" #P "syevjBatched", h, jobz, uplo, n, A, lda, W, info, batch, true);                  \
  }

RGPU_SPECTRAL(S, float)
RGPU_SPECTRAL(D, double)

RGPU_EXPORT cusolverStatus_t cusolverDnXsyevd_bufferSize(cusolverDnHandle_t h, cusolverDnParams_t, cusolverEigMode_t,
                                                         cublasFillMode_t, int64_t, cudaDataType, const void*, int64_t,
                                                         cudaDataType, const void*, cudaDataType, size_t* device,
                                                         size_t* host) {
  return no_workspace_64(h, device, host);
}
RGPU_EXPORT cusolverStatus_t cusolverDnXsyevd(cusolverDnHandle_t h, cusolverDnParams_t, cusolverEigMode_t jobz,
                                              cublasFillMode_t uplo, int64_t n, cudaDataType ta, void* A, int64_t lda,
                                              cudaDataType tw, void* W, cudaDataType tc, void*, size_t, void*, size_t,
                                              int* info) {
  if (ta != tw || ta != tc) return CUSOLVER_STATUS_NOT_SUPPORTED;
  if (ta == CUDA_R_32F)
    return syevd<float>("cusolverDnXsyevd", h, jobz, uplo, n, static_cast<float*>(A), lda, static_cast<float*>(W), info);
  if (ta == CUDA_R_64F)
    return syevd<double>("cusolverDnXsyevd", h, jobz, uplo, n, static_cast<double*>(A), lda, static_cast<double*>(W),
                         info);
  return CUSOLVER_STATUS_NOT_SUPPORTED;
}
