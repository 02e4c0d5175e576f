// The stand-in's generic-API descriptors: created, batched, attributed and
// destroyed as cuSPARSE's are. Their arrays are device addresses, read only
// when work runs.
#include <algorithm>

#include "sparse.h"

namespace {

namespace sw = ::rgpu::protocol::cusparse;

bool index_ok(int32_t t) { return t == CUSPARSE_INDEX_32I || t == CUSPARSE_INDEX_64I; }
bool value_ok(int32_t t) { return t == CUDA_R_32F || t == CUDA_R_64F; }

cusparseStatus_t create(cusparseSpMatDescr_t* out, const sw::SpMat& m) {
  if (!out || m.rows < 0 || m.cols < 0 || m.nnz < 0 || !sw::base_ok(m.base)) return CUSPARSE_STATUS_INVALID_VALUE;
  // 16-bit indices and other value types are valid cuSPARSE, but not computed here.
  if (!index_ok(m.offsets_type) || !index_ok(m.index_type) || !value_ok(m.value_type)) {
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  }
  *out = new cusparseSpMatDescr{m};
  return CUSPARSE_STATUS_SUCCESS;
}

}  // namespace

RGPU_EXPORT cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* csrRowOffsets, void* csrColInd, void* csrValues,
                                               cusparseIndexType_t csrRowOffsetsType,
                                               cusparseIndexType_t csrColIndType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return rgpu::cpusparse::guarded("cusparseCreateCsr", [&] {
    return create(spMatDescr, sw::csr(rows, cols, nnz, reinterpret_cast<CUdeviceptr>(csrRowOffsets),
                                reinterpret_cast<CUdeviceptr>(csrColInd), reinterpret_cast<CUdeviceptr>(csrValues),
                                csrRowOffsetsType, csrColIndType, idxBase, valueType));
  });
}

RGPU_EXPORT cusparseStatus_t cusparseCreateCoo(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* cooRowInd, void* cooColInd, void* cooValues,
                                               cusparseIndexType_t cooIdxType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return rgpu::cpusparse::guarded("cusparseCreateCoo", [&] {
    return create(spMatDescr, sw::coo(rows, cols, nnz, reinterpret_cast<CUdeviceptr>(cooRowInd),
                                reinterpret_cast<CUdeviceptr>(cooColInd), reinterpret_cast<CUdeviceptr>(cooValues),
                                cooIdxType, idxBase, valueType));
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
    *dnMatDescr = new cusparseDnMatDescr{
        sw::dense_matrix(rows, cols, ld, reinterpret_cast<CUdeviceptr>(values), valueType, order)};
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
    *dnVecDescr = new cusparseDnVecDescr{sw::dense_vector(size, reinterpret_cast<CUdeviceptr>(values), valueType)};
    return CUSPARSE_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cusparseStatus_t cusparseDestroyDnVec(cusparseConstDnVecDescr_t dnVecDescr) {
  delete dnVecDescr;
  return CUSPARSE_STATUS_SUCCESS;
}
