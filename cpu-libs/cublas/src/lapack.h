// LAPACK (Debian's LAPACKE) for the CPU stand-ins of cuSOLVER and of
// cuBLAS's batched LU/QR/least squares: one overload set per routine for
// float and double, on compact column-major host buffers, and the LU
// without pivoting that LAPACK lacks (cuSOLVER's getrf with a NULL pivot
// array, cuBLAS's getrfBatched with a NULL P).
#pragma once

#include <lapacke.h>

#include <algorithm>
#include <cmath>

namespace rgpu::cpulapack {

// LAPACKE refuses a matrix holding a NaN by default (info -i, nothing
// computed); cuSOLVER computes and lets NaNs propagate, and callers rely on
// that (PyTorch's householder_product hands orgqr columns it has not
// initialized, which LAPACK overwrites). Turned off once, before the first
// routine runs; the flag is process-wide and only the stand-ins use LAPACKE
// in rgpud.
inline void compute_through_nans() {
  static const bool once = (LAPACKE_set_nancheck(0), true);
  (void)once;
}

inline lapack_int potrf(char u, lapack_int n, float* a, lapack_int lda) {
  compute_through_nans();
  return LAPACKE_spotrf(LAPACK_COL_MAJOR, u, n, a, lda);
}
inline lapack_int potrf(char u, lapack_int n, double* a, lapack_int lda) {
  compute_through_nans();
  return LAPACKE_dpotrf(LAPACK_COL_MAJOR, u, n, a, lda);
}
inline lapack_int potrs(char u, lapack_int n, lapack_int nrhs, const float* a, lapack_int lda, float* b,
                        lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_spotrs(LAPACK_COL_MAJOR, u, n, nrhs, a, lda, b, ldb);
}
inline lapack_int potrs(char u, lapack_int n, lapack_int nrhs, const double* a, lapack_int lda, double* b,
                        lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_dpotrs(LAPACK_COL_MAJOR, u, n, nrhs, a, lda, b, ldb);
}
inline lapack_int getrf(lapack_int m, lapack_int n, float* a, lapack_int lda, lapack_int* ipiv) {
  compute_through_nans();
  return LAPACKE_sgetrf(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrf(lapack_int m, lapack_int n, double* a, lapack_int lda, lapack_int* ipiv) {
  compute_through_nans();
  return LAPACKE_dgetrf(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrs(char t, lapack_int n, lapack_int nrhs, const float* a, lapack_int lda, const lapack_int* ipiv,
                        float* b, lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_sgetrs(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int getrs(char t, lapack_int n, lapack_int nrhs, const double* a, lapack_int lda,
                        const lapack_int* ipiv, double* b, lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_dgetrs(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int geqrf(lapack_int m, lapack_int n, float* a, lapack_int lda, float* tau) {
  compute_through_nans();
  return LAPACKE_sgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
inline lapack_int geqrf(lapack_int m, lapack_int n, double* a, lapack_int lda, double* tau) {
  compute_through_nans();
  return LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
inline lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, float* a, lapack_int lda, const float* tau) {
  compute_through_nans();
  return LAPACKE_sorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}
inline lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, double* a, lapack_int lda, const double* tau) {
  compute_through_nans();
  return LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}
inline lapack_int ormqr(char side, char t, lapack_int m, lapack_int n, lapack_int k, const float* a, lapack_int lda,
                        const float* tau, float* c, lapack_int ldc) {
  compute_through_nans();
  return LAPACKE_sormqr(LAPACK_COL_MAJOR, side, t, m, n, k, a, lda, tau, c, ldc);
}
inline lapack_int ormqr(char side, char t, lapack_int m, lapack_int n, lapack_int k, const double* a, lapack_int lda,
                        const double* tau, double* c, lapack_int ldc) {
  compute_through_nans();
  return LAPACKE_dormqr(LAPACK_COL_MAJOR, side, t, m, n, k, a, lda, tau, c, ldc);
}
inline lapack_int gesvd(char ju, char jvt, lapack_int m, lapack_int n, float* a, lapack_int lda, float* s, float* u,
                        lapack_int ldu, float* vt, lapack_int ldvt, float* superb) {
  compute_through_nans();
  return LAPACKE_sgesvd(LAPACK_COL_MAJOR, ju, jvt, m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}
inline lapack_int gesvd(char ju, char jvt, lapack_int m, lapack_int n, double* a, lapack_int lda, double* s,
                        double* u, lapack_int ldu, double* vt, lapack_int ldvt, double* superb) {
  compute_through_nans();
  return LAPACKE_dgesvd(LAPACK_COL_MAJOR, ju, jvt, m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}
inline lapack_int syevd(char jobz, char u, lapack_int n, float* a, lapack_int lda, float* w) {
  compute_through_nans();
  return LAPACKE_ssyevd(LAPACK_COL_MAJOR, jobz, u, n, a, lda, w);
}
inline lapack_int syevd(char jobz, char u, lapack_int n, double* a, lapack_int lda, double* w) {
  compute_through_nans();
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, jobz, u, n, a, lda, w);
}
inline lapack_int sytrf(char u, lapack_int n, float* a, lapack_int lda, lapack_int* ipiv) {
  compute_through_nans();
  return LAPACKE_ssytrf(LAPACK_COL_MAJOR, u, n, a, lda, ipiv);
}
inline lapack_int sytrf(char u, lapack_int n, double* a, lapack_int lda, lapack_int* ipiv) {
  compute_through_nans();
  return LAPACKE_dsytrf(LAPACK_COL_MAJOR, u, n, a, lda, ipiv);
}
inline lapack_int sytrs(char u, lapack_int n, lapack_int nrhs, const float* a, lapack_int lda, const lapack_int* ipiv,
                        float* b, lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_ssytrs(LAPACK_COL_MAJOR, u, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int sytrs(char u, lapack_int n, lapack_int nrhs, const double* a, lapack_int lda,
                        const lapack_int* ipiv, double* b, lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_dsytrs(LAPACK_COL_MAJOR, u, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int gels(char t, lapack_int m, lapack_int n, lapack_int nrhs, float* a, lapack_int lda, float* b,
                       lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_sgels(LAPACK_COL_MAJOR, t, m, n, nrhs, a, lda, b, ldb);
}
inline lapack_int gels(char t, lapack_int m, lapack_int n, lapack_int nrhs, double* a, lapack_int lda, double* b,
                       lapack_int ldb) {
  compute_through_nans();
  return LAPACKE_dgels(LAPACK_COL_MAJOR, t, m, n, nrhs, a, lda, b, ldb);
}

// LU without row exchanges of an m x n matrix (leading dimension lda):
// the first zero pivot's 1-based index (as getrf's info), or 0; the
// factorization goes on past it, as cuSOLVER's does.
template <class T>
lapack_int lu_no_pivot(lapack_int m, lapack_int n, T* a, lapack_int lda) {
  lapack_int info = 0;
  const lapack_int k = std::min(m, n);
  for (lapack_int j = 0; j < k; ++j) {
    const T p = a[j + j * lda];
    if (p == T(0)) {
      if (!info) info = j + 1;
      continue;
    }
    for (lapack_int i = j + 1; i < m; ++i) a[i + j * lda] /= p;
    for (lapack_int c = j + 1; c < n; ++c) {
      const T f = a[j + c * lda];
      if (f == T(0)) continue;
      for (lapack_int i = j + 1; i < m; ++i) a[i + c * lda] -= a[i + j * lda] * f;
    }
  }
  return info;
}

// The leading dimension LAPACK accepts for `rows` rows of a compact buffer.
inline lapack_int ld_of(long long rows) { return static_cast<lapack_int>(std::max(1LL, rows)); }

}  // namespace rgpu::cpulapack
