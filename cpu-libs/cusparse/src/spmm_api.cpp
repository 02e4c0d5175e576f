// The stand-in's SpMM, SpMV and SDDMM entry points (and their buffer sizes,
// always 0): the descriptors' checks, then one stream-ordered job that copies A's
// arrays, B (or x) and C (or y) in, runs spmm.h's product and copies C back.
#include <cstring>

#include "job.h"
#include "rgpu/protocol/cusparse_wire.h"
#include "sparse.h"
#include "spmm.h"

namespace rgpu::cpusparse {
namespace {

namespace sw = ::rgpu::protocol::cusparse;

// A dense vector as an n x 1 column-major matrix.
cusparseDnMatDescr column_of(const cusparseDnVecDescr& v) {
  return {sw::dense_matrix(v.size, 1, std::max<int64_t>(1, v.size), v.values, v.value_type, sw::kOrderCol)};
}

bool op_ok(cusparseOperation_t op) {
  return op == CUSPARSE_OPERATION_NON_TRANSPOSE || op == CUSPARSE_OPERATION_TRANSPOSE ||
         op == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
}

// What a product needs checked before a job is built: real values of one
// type that is also the compute type, agreeing shapes and batch counts.
cusparseStatus_t check(cusparseOperation_t op_a, cusparseOperation_t op_b, const cusparseSpMatDescr& a,
                       const cusparseDnMatDescr& b, const cusparseDnMatDescr& c, cudaDataType compute) {
  if (!op_ok(op_a) || !op_ok(op_b)) return CUSPARSE_STATUS_INVALID_VALUE;
  if (a.format != CUSPARSE_FORMAT_CSR && a.format != CUSPARSE_FORMAT_COO) return CUSPARSE_STATUS_NOT_SUPPORTED;
  if (a.value_type != b.value_type || a.value_type != c.value_type || compute != a.value_type) {
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  }
  const char* why = "";
  if (!sw::spmm_shapes(op_a, op_b, a, b, c, &why)) return CUSPARSE_STATUS_INVALID_VALUE;
  return CUSPARSE_STATUS_SUCCESS;
}

struct Scalars {
  cusparsePointerMode_t mode = CUSPARSE_POINTER_MODE_HOST;
  double alpha = 0, beta = 0;  // host mode: read at the call, as cuSPARSE does
  CUdeviceptr alpha_dev = 0, beta_dev = 0;
};

Scalars scalars(cusparseHandle_t h, const void* alpha, const void* beta, cudaDataType type) {
  Scalars s;
  s.mode = h->pointer_mode;
  if (s.mode == CUSPARSE_POINTER_MODE_DEVICE) {
    s.alpha_dev = reinterpret_cast<CUdeviceptr>(alpha);
    s.beta_dev = reinterpret_cast<CUdeviceptr>(beta);
  } else if (type == CUDA_R_32F) {
    s.alpha = *static_cast<const float*>(alpha);
    s.beta = *static_cast<const float*>(beta);
  } else {
    s.alpha = *static_cast<const double*>(alpha);
    s.beta = *static_cast<const double*>(beta);
  }
  return s;
}

template <class T>
T scalar_at(Job& job, size_t i) {
  T v;
  std::memcpy(&v, job.host(i), sizeof v);
  return v;
}

SparseView sparse_view(const cusparseSpMatDescr& a) {
  SparseView av;
  av.csr = a.format == CUSPARSE_FORMAT_CSR;
  av.rows = a.rows;
  av.cols = a.cols;
  av.nnz = a.nnz;
  av.base = a.base == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
  av.rows_64 = (av.csr ? a.offsets_type : a.index_type) == CUSPARSE_INDEX_64I;
  av.cols_64 = a.index_type == CUSPARSE_INDEX_64I;
  av.batch = a.batch;
  av.offsets_stride = a.offsets_stride;
  av.values_stride = a.values_stride;
  return av;
}

DenseView dense_view(const cusparseDnMatDescr& d) {
  DenseView v;
  v.rows = d.rows;
  v.cols = d.cols;
  v.ld = d.ld;
  v.row_major = d.order == CUSPARSE_ORDER_ROW;
  v.batch = d.batch;
  v.stride = d.stride;
  return v;
}

// Queues C = alpha op(A) op(B) + beta C on the handle's stream.
cusparseStatus_t submit_product(cusparseHandle_t h, cusparseOperation_t op_a, cusparseOperation_t op_b,
                                const Scalars& s, const cusparseSpMatDescr& a, const cusparseDnMatDescr& b,
                                const cusparseDnMatDescr& c) {
  sw::Extent ext[3];
  const char* why = "";
  if (!sw::extents(a, ext, &why)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  const uint64_t b_bytes = sw::extent_bytes(b), c_bytes = sw::extent_bytes(c);
  for (const sw::Extent& e : ext) {
    if (e.bytes == kNoExtent) return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (b_bytes == kNoExtent || c_bytes == kNoExtent) return CUSPARSE_STATUS_INVALID_VALUE;
  ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUSPARSE_STATUS_NOT_INITIALIZED;
  auto job = std::make_unique<Job>();
  const size_t ia = job->add({ext[0].ptr, ext[0].bytes, false});
  job->add({ext[1].ptr, ext[1].bytes, false});
  job->add({ext[2].ptr, ext[2].bytes, false});
  const size_t ib = job->add({b.values, b_bytes, false});
  const size_t ic = job->add({c.values, c_bytes, true});
  const uint64_t elem = a.value_type == CUDA_R_32F ? 4 : 8;
  size_t is = 0;
  if (s.mode == CUSPARSE_POINTER_MODE_DEVICE) {
    is = job->add({s.alpha_dev, elem, false});
    job->add({s.beta_dev, elem, false});
  }
  job->failed = h->failed;
  SparseView av = sparse_view(a);
  const DenseView bv = dense_view(b), cv = dense_view(c);
  const bool f32 = a.value_type == CUDA_R_32F;
  const bool device_scalars = s.mode == CUSPARSE_POINTER_MODE_DEVICE;
  const int opa = op_a, opb = op_b;
  job->compute = [=](Job& j) mutable {
    av.rows_idx = j.host(ia);
    av.cols_idx = j.host(ia + 1);
    av.values = j.host(ia + 2);
    DenseView bj = bv, cj = cv;
    bj.values = j.host(ib);
    cj.values = j.host(ic);
    if (f32) {
      const float al = device_scalars ? scalar_at<float>(j, is) : float(s.alpha);
      const float be = device_scalars ? scalar_at<float>(j, is + 1) : float(s.beta);
      return spmm<float>(opa, opb, al, av, bj, be, cj);
    }
    const double al = device_scalars ? scalar_at<double>(j, is) : s.alpha;
    const double be = device_scalars ? scalar_at<double>(j, is + 1) : s.beta;
    return spmm<double>(opa, opb, al, av, bj, be, cj);
  };
  const cusparseStatus_t st = submit(std::move(job), h->stream);
  if (st == CUSPARSE_STATUS_INVALID_VALUE) RGPU_WARN("cpu cusparse: an array is shorter than its descriptor says");
  return st;
}

// Queues C's values = alpha op(A) op(B) sampled at C's pattern + beta C.
cusparseStatus_t submit_sddmm(cusparseHandle_t h, cusparseOperation_t op_a, cusparseOperation_t op_b,
                              const Scalars& s, const cusparseDnMatDescr& a, const cusparseDnMatDescr& b,
                              const cusparseSpMatDescr& c) {
  sw::Extent ext[3];
  const char* why = "";
  if (!sw::extents(c, ext, &why)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  const uint64_t a_bytes = sw::extent_bytes(a), b_bytes = sw::extent_bytes(b);
  for (const sw::Extent& e : ext) {
    if (e.bytes == kNoExtent) return CUSPARSE_STATUS_INVALID_VALUE;
  }
  if (a_bytes == kNoExtent || b_bytes == kNoExtent) return CUSPARSE_STATUS_INVALID_VALUE;
  ContextGuard guard(h->ctx);
  if (!guard.ok()) return CUSPARSE_STATUS_NOT_INITIALIZED;
  auto job = std::make_unique<Job>();
  const size_t ic = job->add({ext[0].ptr, ext[0].bytes, false});
  job->add({ext[1].ptr, ext[1].bytes, false});
  job->add({ext[2].ptr, ext[2].bytes, true});
  const size_t ia = job->add({a.values, a_bytes, false});
  const size_t ib = job->add({b.values, b_bytes, false});
  const uint64_t elem = c.value_type == CUDA_R_32F ? 4 : 8;
  size_t is = 0;
  if (s.mode == CUSPARSE_POINTER_MODE_DEVICE) {
    is = job->add({s.alpha_dev, elem, false});
    job->add({s.beta_dev, elem, false});
  }
  job->failed = h->failed;
  SparseView cv = sparse_view(c);
  const DenseView av = dense_view(a), bv = dense_view(b);
  const bool f32 = c.value_type == CUDA_R_32F;
  const bool device_scalars = s.mode == CUSPARSE_POINTER_MODE_DEVICE;
  const int opa = op_a, opb = op_b;
  job->compute = [=](Job& j) mutable {
    cv.rows_idx = j.host(ic);
    cv.cols_idx = j.host(ic + 1);
    cv.values = j.host(ic + 2);
    DenseView aj = av, bj = bv;
    aj.values = j.host(ia);
    bj.values = j.host(ib);
    if (f32) {
      const float al = device_scalars ? scalar_at<float>(j, is) : float(s.alpha);
      const float be = device_scalars ? scalar_at<float>(j, is + 1) : float(s.beta);
      return sddmm<float>(opa, opb, al, aj, bj, be, cv, static_cast<float*>(j.host(ic + 2)));
    }
    const double al = device_scalars ? scalar_at<double>(j, is) : s.alpha;
    const double be = device_scalars ? scalar_at<double>(j, is + 1) : s.beta;
    return sddmm<double>(opa, opb, al, aj, bj, be, cv, static_cast<double*>(j.host(ic + 2)));
  };
  return submit(std::move(job), h->stream);
}

cusparseStatus_t check_sddmm(cusparseOperation_t op_a, cusparseOperation_t op_b, const cusparseDnMatDescr& a,
                             const cusparseDnMatDescr& b, const cusparseSpMatDescr& c, cudaDataType compute) {
  if (!op_ok(op_a) || !op_ok(op_b)) return CUSPARSE_STATUS_INVALID_VALUE;
  if (c.format != CUSPARSE_FORMAT_CSR) return CUSPARSE_STATUS_NOT_SUPPORTED;
  if (a.value_type != b.value_type || a.value_type != c.value_type || compute != a.value_type) {
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  }
  const char* why = "";
  if (!sw::sddmm_shapes(op_a, op_b, a, b, c, &why)) return CUSPARSE_STATUS_INVALID_VALUE;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t enter(cusparseHandle_t h, const void* alpha, const void* beta) {
  if (!h) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta) return CUSPARSE_STATUS_INVALID_VALUE;
  return take_failure(h);
}

}  // namespace
}  // namespace rgpu::cpusparse

using rgpu::cpusparse::guarded;

RGPU_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                     cusparseOperation_t opB, const void* alpha,
                                                     cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                     const void* beta, cusparseDnMatDescr_t matC,
                                                     cudaDataType computeType, cusparseSpMMAlg_t, size_t* bufferSize) {
  return guarded("cusparseSpMM_bufferSize", [&] {
    if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || !matA || !matB || !matC || !bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
    if (auto s = rgpu::cpusparse::check(opA, opB, *matA, *matB, *matC, computeType); s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    *bufferSize = 0;  // the host needs no device scratch
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB,
                                          const void* alpha, cusparseConstSpMatDescr_t matA,
                                          cusparseConstDnMatDescr_t matB, const void* beta,
                                          cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t,
                                          void*) {
  return guarded("cusparseSpMM", [&] {
    if (auto s = rgpu::cpusparse::enter(handle, alpha, beta); s != CUSPARSE_STATUS_SUCCESS) return s;
    if (!matA || !matB || !matC) return CUSPARSE_STATUS_INVALID_VALUE;
    if (auto s = rgpu::cpusparse::check(opA, opB, *matA, *matB, *matC, computeType); s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    return rgpu::cpusparse::submit_product(handle, opA, opB, rgpu::cpusparse::scalars(handle, alpha, beta, computeType),
                                           *matA, *matB, *matC);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseSpMV_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                     const void* alpha, cusparseConstSpMatDescr_t matA,
                                                     cusparseConstDnVecDescr_t vecX, const void* beta,
                                                     cusparseDnVecDescr_t vecY, cudaDataType computeType,
                                                     cusparseSpMVAlg_t, size_t* bufferSize) {
  return guarded("cusparseSpMV_bufferSize", [&] {
    if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || !matA || !vecX || !vecY || !bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
    if (matA->batch != 1) return CUSPARSE_STATUS_NOT_SUPPORTED;
    auto x = rgpu::cpusparse::column_of(*vecX), y = rgpu::cpusparse::column_of(*vecY);
    if (auto s = rgpu::cpusparse::check(opA, CUSPARSE_OPERATION_NON_TRANSPOSE, *matA, x, y, computeType);
        s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    *bufferSize = 0;
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseSpMV(cusparseHandle_t handle, cusparseOperation_t opA, const void* alpha,
                                          cusparseConstSpMatDescr_t matA, cusparseConstDnVecDescr_t vecX,
                                          const void* beta, cusparseDnVecDescr_t vecY, cudaDataType computeType,
                                          cusparseSpMVAlg_t, void*) {
  return guarded("cusparseSpMV", [&] {
    if (auto s = rgpu::cpusparse::enter(handle, alpha, beta); s != CUSPARSE_STATUS_SUCCESS) return s;
    if (!matA || !vecX || !vecY) return CUSPARSE_STATUS_INVALID_VALUE;
    if (matA->batch != 1) return CUSPARSE_STATUS_NOT_SUPPORTED;
    auto x = rgpu::cpusparse::column_of(*vecX), y = rgpu::cpusparse::column_of(*vecY);
    if (auto s = rgpu::cpusparse::check(opA, CUSPARSE_OPERATION_NON_TRANSPOSE, *matA, x, y, computeType);
        s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    return rgpu::cpusparse::submit_product(handle, opA, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           rgpu::cpusparse::scalars(handle, alpha, beta, computeType), *matA, x, y);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseSDDMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                      cusparseOperation_t opB, const void* alpha,
                                                      cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                      const void* beta, cusparseSpMatDescr_t matC,
                                                      cudaDataType computeType, cusparseSDDMMAlg_t,
                                                      size_t* bufferSize) {
  return guarded("cusparseSDDMM_bufferSize", [&] {
    if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || !matA || !matB || !matC || !bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
    if (auto s = rgpu::cpusparse::check_sddmm(opA, opB, *matA, *matB, *matC, computeType);
        s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    *bufferSize = 0;
    return CUSPARSE_STATUS_SUCCESS;
  });
}

// Nothing to prepare on the host: the checks only.
RGPU_EXPORT cusparseStatus_t cusparseSDDMM_preprocess(cusparseHandle_t handle, cusparseOperation_t opA,
                                                      cusparseOperation_t opB, const void* alpha,
                                                      cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                      const void* beta, cusparseSpMatDescr_t matC,
                                                      cudaDataType computeType, cusparseSDDMMAlg_t, void*) {
  return guarded("cusparseSDDMM_preprocess", [&] {
    if (auto s = rgpu::cpusparse::enter(handle, alpha, beta); s != CUSPARSE_STATUS_SUCCESS) return s;
    if (!matA || !matB || !matC) return CUSPARSE_STATUS_INVALID_VALUE;
    return rgpu::cpusparse::check_sddmm(opA, opB, *matA, *matB, *matC, computeType);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseSDDMM(cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB,
                                           const void* alpha, cusparseConstDnMatDescr_t matA,
                                           cusparseConstDnMatDescr_t matB, const void* beta,
                                           cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t,
                                           void*) {
  return guarded("cusparseSDDMM", [&] {
    if (auto s = rgpu::cpusparse::enter(handle, alpha, beta); s != CUSPARSE_STATUS_SUCCESS) return s;
    if (!matA || !matB || !matC) return CUSPARSE_STATUS_INVALID_VALUE;
    if (auto s = rgpu::cpusparse::check_sddmm(opA, opB, *matA, *matB, *matC, computeType);
        s != CUSPARSE_STATUS_SUCCESS) {
      return s;
    }
    return rgpu::cpusparse::submit_sddmm(handle, opA, opB,
                                         rgpu::cpusparse::scalars(handle, alpha, beta, computeType), *matA, *matB,
                                         *matC);
  });
}
