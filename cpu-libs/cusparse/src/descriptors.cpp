// The stand-in's generic-API descriptors: created, batched, attributed and
// destroyed as cuSPARSE's are. Their arrays are device addresses, read only
// when work runs.
#include <algorithm>

#include "sparse.h"

namespace {

bool index_ok(cusparseIndexType_t t) { return t == CUSPARSE_INDEX_32I || t == CUSPARSE_INDEX_64I; }
bool value_ok(cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_64F; }
bool base_ok(cusparseIndexBase_t b) { return b == CUSPARSE_INDEX_BASE_ZERO || b == CUSPARSE_INDEX_BASE_ONE; }

cusparseStatus_t create(cusparseSpMatDescr_t* out, const cusparseSpMatDescr& m) {
  if (!out || m.rows < 0 || m.cols < 0 || m.nnz < 0 || !base_ok(m.base)) return CUSPARSE_STATUS_INVALID_VALUE;
  // 16-bit indices and other value types are valid cuSPARSE, but not computed here.
  if (!index_ok(m.offsets_type) || !index_ok(m.index_type) || !value_ok(m.value_type)) {
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  }
  *out = new cusparseSpMatDescr(m);
  return CUSPARSE_STATUS_SUCCESS;
}

}  // namespace

RGPU_EXPORT cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* csrRowOffsets, void* csrColInd, void* csrValues,
                                               cusparseIndexType_t csrRowOffsetsType,
                                               cusparseIndexType_t csrColIndType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return rgpu::cpusparse::guarded("cusparseCreateCsr", [&] {
    cusparseSpMatDescr m;
    m.format = CUSPARSE_FORMAT_CSR;
    m.rows = rows;
    m.cols = cols;
    m.nnz = nnz;
    m.rows_ptr = reinterpret_cast<CUdeviceptr>(csrRowOffsets);
    m.cols_ptr = reinterpret_cast<CUdeviceptr>(csrColInd);
    m.values = reinterpret_cast<CUdeviceptr>(csrValues);
    m.offsets_type = csrRowOffsetsType;
    m.index_type = csrColIndType;
    m.base = idxBase;
    m.value_type = valueType;
    return create(spMatDescr, m);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseCreateCoo(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* cooRowInd, void* cooColInd, void* cooValues,
                                               cusparseIndexType_t cooIdxType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return rgpu::cpusparse::guarded("cusparseCreateCoo", [&] {
    cusparseSpMatDescr m;
    m.format = CUSPARSE_FORMAT_COO;
    m.rows = rows;
    m.cols = cols;
    m.nnz = nnz;
    m.rows_ptr = reinterpret_cast<CUdeviceptr>(cooRowInd);
    m.cols_ptr = reinterpret_cast<CUdeviceptr>(cooColInd);
    m.values = reinterpret_cast<CUdeviceptr>(cooValues);
    m.offsets_type = cooIdxType;
    m.index_type = cooIdxType;
    m.base = idxBase;
    m.value_type = valueType;
    return create(spMatDescr, m);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t spMatDescr) {
  delete spMatDescr;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCsrSetStridedBatch(cusparseSpMatDescr_t spMatDescr, int batchCount,
                                                        int64_t offsetsBatchStride,
                                                        int64_t columnsValuesBatchStride) {
  if (!spMatDescr || spMatDescr->format != CUSPARSE_FORMAT_CSR || batchCount < 1 || offsetsBatchStride < 0 ||
      columnsValuesBatchStride < 0) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  spMatDescr->batch = batchCount;
  spMatDescr->offsets_stride = offsetsBatchStride;
  spMatDescr->values_stride = columnsValuesBatchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCooSetStridedBatch(cusparseSpMatDescr_t spMatDescr, int batchCount,
                                                        int64_t batchStride) {
  if (!spMatDescr || spMatDescr->format != CUSPARSE_FORMAT_COO || batchCount < 1 || batchStride < 0) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  spMatDescr->batch = batchCount;
  spMatDescr->offsets_stride = batchStride;
  spMatDescr->values_stride = batchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatSetAttribute(cusparseSpMatDescr_t spMatDescr,
                                                       cusparseSpMatAttribute_t attribute, void* data,
                                                       size_t dataSize) {
  if (!spMatDescr || !data || dataSize != sizeof(int32_t)) return CUSPARSE_STATUS_INVALID_VALUE;
  const int32_t v = *static_cast<const int32_t*>(data);
  if (attribute == CUSPARSE_SPMAT_FILL_MODE) {
    spMatDescr->fill_mode = v;
  } else if (attribute == CUSPARSE_SPMAT_DIAG_TYPE) {
    spMatDescr->diag_type = v;
  } else {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCreateDnMat(cusparseDnMatDescr_t* dnMatDescr, int64_t rows, int64_t cols,
                                                 int64_t ld, void* values, cudaDataType valueType,
                                                 cusparseOrder_t order) {
  return rgpu::cpusparse::guarded("cusparseCreateDnMat", [&] {
    if (!dnMatDescr || rows < 0 || cols < 0 || (order != CUSPARSE_ORDER_COL && order != CUSPARSE_ORDER_ROW) ||
        ld < std::max<int64_t>(1, order == CUSPARSE_ORDER_COL ? rows : cols)) {
      return CUSPARSE_STATUS_INVALID_VALUE;
    }
    if (!value_ok(valueType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
    auto* d = new cusparseDnMatDescr();
    d->rows = rows;
    d->cols = cols;
    d->ld = ld;
    d->values = reinterpret_cast<CUdeviceptr>(values);
    d->value_type = valueType;
    d->order = order;
    *dnMatDescr = d;
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseDestroyDnMat(cusparseConstDnMatDescr_t dnMatDescr) {
  delete dnMatDescr;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnMatSetStridedBatch(cusparseDnMatDescr_t dnMatDescr, int batchCount,
                                                          int64_t batchStride) {
  if (!dnMatDescr || batchCount < 1 || batchStride < 0) return CUSPARSE_STATUS_INVALID_VALUE;
  dnMatDescr->batch = batchCount;
  dnMatDescr->stride = batchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCreateDnVec(cusparseDnVecDescr_t* dnVecDescr, int64_t size, void* values,
                                                 cudaDataType valueType) {
  return rgpu::cpusparse::guarded("cusparseCreateDnVec", [&] {
    if (!dnVecDescr || size < 0) return CUSPARSE_STATUS_INVALID_VALUE;
    if (!value_ok(valueType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
    auto* d = new cusparseDnVecDescr();
    d->size = size;
    d->values = reinterpret_cast<CUdeviceptr>(values);
    d->value_type = valueType;
    *dnVecDescr = d;
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseDestroyDnVec(cusparseConstDnVecDescr_t dnVecDescr) {
  delete dnVecDescr;
  return CUSPARSE_STATUS_SUCCESS;
}
