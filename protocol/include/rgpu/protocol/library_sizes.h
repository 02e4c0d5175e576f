// The extents of a generated call's arguments, for the length expressions
// of the descriptions (api/cublas.api, api/driver.api: dev=, len=): how
// many bytes of device memory a BLAS matrix or vector or a pitched 2-D
// region spans, how long an element or a scale factor of a data type is. The server checks the ranges
// against the session's ledger before the library runs; the client sizes a
// host scalar with them.
//
// Every function takes the values as the client sent them: a negative or
// inconsistent size (a leading dimension below the row count, an unknown
// type) answers kNoExtent, which no range check and no length accepts, so a
// malformed call is refused rather than read. Sizes saturate instead of
// wrapping. The names are global (rgpu_ prefix) because the descriptions'
// expressions name them unqualified.
#pragma once

#include <cstdint>
#include <limits>

inline constexpr uint64_t kNoExtent = std::numeric_limits<uint64_t>::max();

// a * b, or kNoExtent when it does not fit.
constexpr uint64_t rgpu_mul_extent(uint64_t a, uint64_t b) {
  if (a == kNoExtent || b == kNoExtent) return kNoExtent;
  if (a != 0 && b > kNoExtent / a) return kNoExtent;
  return a * b;
}
constexpr uint64_t rgpu_add_extent(uint64_t a, uint64_t b) {
  if (a == kNoExtent || b == kNoExtent || b > kNoExtent - a) return kNoExtent;
  return a + b;
}

// Bytes of one element of a cudaDataType (library_types.h values), or
// kNoExtent for a type rgpu does not know.
constexpr uint64_t rgpu_data_type_bytes(long long type) {
  switch (type) {
    case 2: case 14: return 2;            // CUDA_R_16F, CUDA_R_16BF
    case 6: case 15: return 4;            // CUDA_C_16F, CUDA_C_16BF
    case 0: case 10: case 12: return 4;   // CUDA_R_32F, CUDA_R_32I, CUDA_R_32U
    case 4: case 11: case 13: return 8;   // CUDA_C_32F, CUDA_C_32I, CUDA_C_32U
    case 1: case 24: case 26: return 8;   // CUDA_R_64F, CUDA_R_64I, CUDA_R_64U
    case 5: return 16;                    // CUDA_C_64F
    case 3: case 8: return 1;             // CUDA_R_8I, CUDA_R_8U
    case 28: case 29: return 1;           // CUDA_R_8F_E4M3, CUDA_R_8F_E5M2
    default: return kNoExtent;
  }
}

// Bytes of a gemm's alpha and beta: the scale type that cublasComputeType_t
// `compute` implies for output type `c_type` (complex outputs scale by a
// complex number). The older cudaDataType spellings of the compute type are
// accepted as cuBLAS accepts them.
constexpr uint64_t rgpu_blas_scale_bytes(long long compute, long long c_type) {
  const bool complex = c_type == 4 || c_type == 5 || c_type == 6 || c_type == 15;
  switch (compute) {
    case 64: case 65: case 2:                          // CUBLAS_COMPUTE_16F(_PEDANTIC), CUDA_R_16F
      return complex ? 4 : 2;
    case 68: case 69: case 74: case 75: case 77: case 78: case 0:  // CUBLAS_COMPUTE_32F(...), CUDA_R_32F
      return complex ? 8 : 4;
    case 70: case 71: case 79: case 1:                 // CUBLAS_COMPUTE_64F(...), CUDA_R_64F
      return complex ? 16 : 8;
    case 72: case 73: case 10:                         // CUBLAS_COMPUTE_32I(_PEDANTIC), CUDA_R_32I
      return 4;
    default:
      return kNoExtent;
  }
}

// Bytes a column-major matrix spans: op(M) is rows x cols as the call names
// it (op 0, CUBLAS_OP_N: stored as is; otherwise transposed), with leading
// dimension ld. Nothing is read of an empty matrix.
constexpr uint64_t rgpu_blas_matrix_bytes(long long op, long long rows, long long cols, long long ld,
                                          uint64_t elem) {
  if (op != 0) {
    const long long t = rows;
    rows = cols;
    cols = t;
  }
  if (rows < 0 || cols < 0 || ld < 1 || ld < rows) return kNoExtent;
  if (rows == 0 || cols == 0) return 0;
  const uint64_t elems = rgpu_add_extent(rgpu_mul_extent(static_cast<uint64_t>(cols - 1), static_cast<uint64_t>(ld)),
                                         static_cast<uint64_t>(rows));
  return rgpu_mul_extent(elems, elem);
}

// Bytes `batch` such matrices span, `stride` elements apart.
constexpr uint64_t rgpu_blas_batch_bytes(long long op, long long rows, long long cols, long long ld,
                                         long long stride, long long batch, uint64_t elem) {
  if (batch < 0 || stride < 0) return kNoExtent;
  const uint64_t one = rgpu_blas_matrix_bytes(op, rows, cols, ld, elem);
  if (batch == 0 || one == 0) return one == kNoExtent ? kNoExtent : 0;
  const uint64_t step = rgpu_mul_extent(static_cast<uint64_t>(stride), elem);
  return rgpu_add_extent(rgpu_mul_extent(step, static_cast<uint64_t>(batch - 1)), one);
}

// Bytes a pitched 2-D region spans: `height` rows of `width` elements of
// `elem` bytes, each row `pitch` bytes after the last (cuMemsetD2D*). A row
// longer than the pitch (rows that overlap) has no extent; the pitch of a
// single row is not read, as the driver does not read it.
constexpr uint64_t rgpu_pitch_bytes(uint64_t pitch, uint64_t width, uint64_t height, uint64_t elem) {
  const uint64_t row = rgpu_mul_extent(width, elem);
  if (row == kNoExtent) return kNoExtent;
  if (width == 0 || height == 0) return 0;
  if (height == 1) return row;
  if (row > pitch) return kNoExtent;
  return rgpu_add_extent(rgpu_mul_extent(pitch, height - 1), row);
}

// Bytes of an array of `count` elements of `elem` bytes (a host out-array
// whose length a call names: cuBLASLt's heuristic results).
constexpr uint64_t rgpu_array_bytes(long long count, uint64_t elem) {
  return count < 0 ? kNoExtent : rgpu_mul_extent(static_cast<uint64_t>(count), elem);
}

// Bytes a vector of n elements spans with increment inc (either sign).
constexpr uint64_t rgpu_blas_vector_bytes(long long n, long long inc, uint64_t elem) {
  if (n < 0) return kNoExtent;
  if (n == 0) return 0;
  const uint64_t step = inc < 0 ? static_cast<uint64_t>(-(inc + 1)) + 1 : static_cast<uint64_t>(inc);
  return rgpu_mul_extent(rgpu_add_extent(rgpu_mul_extent(static_cast<uint64_t>(n - 1), step), 1), elem);
}

// The smaller of two sizes (a LAPACK call's min(m, n)); a negative one
// answers -1, which every extent above refuses.
constexpr long long rgpu_min_dim(long long a, long long b) {
  if (a < 0 || b < 0) return -1;
  return a < b ? a : b;
}

// Bytes of gesvd's U (jobu 'A': m x m, 'S': m x min(m,n); 'N' and 'O' do not
// touch it) and VT (jobvt 'A': n x n, 'S': min(m,n) x n), leading dimension ld.
constexpr uint64_t rgpu_gesvd_u_bytes(long long job, long long m, long long n, long long ld, uint64_t elem) {
  switch (job) {
    case 'A': return rgpu_blas_matrix_bytes(0, m, m, ld, elem);
    case 'S': return rgpu_blas_matrix_bytes(0, m, rgpu_min_dim(m, n), ld, elem);
    case 'N': case 'O': return 0;
    default: return kNoExtent;
  }
}
constexpr uint64_t rgpu_gesvd_vt_bytes(long long job, long long m, long long n, long long ld, uint64_t elem) {
  switch (job) {
    case 'A': return rgpu_blas_matrix_bytes(0, n, n, ld, elem);
    case 'S': return rgpu_blas_matrix_bytes(0, rgpu_min_dim(m, n), n, ld, elem);
    case 'N': case 'O': return 0;
    default: return kNoExtent;
  }
}

// Bytes of a Jacobi SVD's U or V (gesvdj): `rows` x `rows`, or x min(m,n)
// when `econ`; none when jobz is CUSOLVER_EIG_MODE_NOVECTOR (0).
constexpr uint64_t rgpu_gesvdj_vectors_bytes(long long jobz, long long econ, long long rows, long long m, long long n,
                                             long long ld, uint64_t elem) {
  if (jobz == 0) return 0;
  return rgpu_blas_matrix_bytes(0, rows, econ ? rgpu_min_dim(m, n) : rows, ld, elem);
}

// Bytes of `batch` column-major matrices of `rows` x `cols` stored back to
// back with leading dimension ld (ld * cols elements each: cuSOLVER's
// gesvdjBatched and syevjBatched).
constexpr uint64_t rgpu_dense_batch_bytes(long long rows, long long cols, long long ld, long long batch,
                                          uint64_t elem) {
  if (batch < 0 || cols < 0 || ld < 1 || rows < 0 || ld < rows) return kNoExtent;
  return rgpu_mul_extent(rgpu_mul_extent(rgpu_mul_extent(static_cast<uint64_t>(ld), static_cast<uint64_t>(cols)),
                                         static_cast<uint64_t>(batch)),
                         elem);
}

// Bytes of `count` vectors of `len` elements back to back (a batch of
// singular values or eigenvalues).
constexpr uint64_t rgpu_grid_bytes(long long len, long long count, uint64_t elem) {
  if (len < 0 || count < 0) return kNoExtent;
  return rgpu_mul_extent(rgpu_mul_extent(static_cast<uint64_t>(len), static_cast<uint64_t>(count)), elem);
}
