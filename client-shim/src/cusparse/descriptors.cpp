// cuSPARSE's generic-API descriptors on the client (cusparse_client.h):
// creating, changing, reading and destroying one is no round trip; SpMM and
// SpMV send them whole (calls.cpp). The error strings are answered here too.
#include <new>

#include "api_common.h"
#include "cusparse_client.h"

namespace sw = rgpu::protocol::cusparse;
using rgpu::shim::cusparse::live;

namespace {

bool index_type_ok(cusparseIndexType_t t) { return sw::index_bytes(t) != kNoExtent; }
bool value_type_ok(cudaDataType t) { return rgpu_data_type_bytes(t) != kNoExtent; }

template <class T>
cusparseStatus_t destroy(const T* d) {
  if (!d) return CUSPARSE_STATUS_SUCCESS;  // as cuSPARSE: destroying NULL is a no-op
  if (!live(d)) return CUSPARSE_STATUS_INVALID_VALUE;
  auto* owned = const_cast<T*>(d);
  owned->magic = 0;
  delete owned;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t create_sparse(cusparseSpMatDescr_t* out, const sw::SpMat& m) {
  if (!out || m.rows < 0 || m.cols < 0 || m.nnz < 0 || !index_type_ok(cusparseIndexType_t(m.offsets_type)) ||
      !index_type_ok(cusparseIndexType_t(m.index_type)) || !sw::base_ok(m.base) ||
      !value_type_ok(cudaDataType(m.value_type))) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  auto* d = new (std::nothrow) cusparseSpMatDescr();
  if (!d) return CUSPARSE_STATUS_ALLOC_FAILED;
  d->m = m;
  *out = d;
  return CUSPARSE_STATUS_SUCCESS;
}

}  // namespace

RGPU_EXPORT cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* csrRowOffsets, void* csrColInd, void* csrValues,
                                               cusparseIndexType_t csrRowOffsetsType,
                                               cusparseIndexType_t csrColIndType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return create_sparse(spMatDescr, sw::csr(rows, cols, nnz, reinterpret_cast<uintptr_t>(csrRowOffsets),
                                           reinterpret_cast<uintptr_t>(csrColInd),
                                           reinterpret_cast<uintptr_t>(csrValues), csrRowOffsetsType,
                                           csrColIndType, idxBase, valueType));
}

RGPU_EXPORT cusparseStatus_t cusparseCreateCoo(cusparseSpMatDescr_t* spMatDescr, int64_t rows, int64_t cols,
                                               int64_t nnz, void* cooRowInd, void* cooColInd, void* cooValues,
                                               cusparseIndexType_t cooIdxType, cusparseIndexBase_t idxBase,
                                               cudaDataType valueType) {
  return create_sparse(spMatDescr, sw::coo(rows, cols, nnz, reinterpret_cast<uintptr_t>(cooRowInd),
                                           reinterpret_cast<uintptr_t>(cooColInd),
                                           reinterpret_cast<uintptr_t>(cooValues), cooIdxType, idxBase, valueType));
}

RGPU_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t spMatDescr) { return destroy(spMatDescr); }

RGPU_EXPORT cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t spMatDescr, void* csrRowOffsets,
                                                    void* csrColInd, void* csrValues) {
  if (!live(spMatDescr) || spMatDescr->m.format != sw::kFormatCsr) return CUSPARSE_STATUS_INVALID_VALUE;
  spMatDescr->m.rows_ptr = reinterpret_cast<uintptr_t>(csrRowOffsets);
  spMatDescr->m.cols_ptr = reinterpret_cast<uintptr_t>(csrColInd);
  spMatDescr->m.values = reinterpret_cast<uintptr_t>(csrValues);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCooSetPointers(cusparseSpMatDescr_t spMatDescr, void* cooRows,
                                                    void* cooColumns, void* cooValues) {
  if (!live(spMatDescr) || spMatDescr->m.format != sw::kFormatCoo) return CUSPARSE_STATUS_INVALID_VALUE;
  spMatDescr->m.rows_ptr = reinterpret_cast<uintptr_t>(cooRows);
  spMatDescr->m.cols_ptr = reinterpret_cast<uintptr_t>(cooColumns);
  spMatDescr->m.values = reinterpret_cast<uintptr_t>(cooValues);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCsrSetStridedBatch(cusparseSpMatDescr_t spMatDescr, int batchCount,
                                                        int64_t offsetsBatchStride,
                                                        int64_t columnsValuesBatchStride) {
  if (!live(spMatDescr) || spMatDescr->m.format != sw::kFormatCsr || batchCount < 1 || offsetsBatchStride < 0 ||
      columnsValuesBatchStride < 0) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  spMatDescr->m.batch = batchCount;
  spMatDescr->m.offsets_stride = offsetsBatchStride;
  spMatDescr->m.values_stride = columnsValuesBatchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCooSetStridedBatch(cusparseSpMatDescr_t spMatDescr, int batchCount,
                                                        int64_t batchStride) {
  if (!live(spMatDescr) || spMatDescr->m.format != sw::kFormatCoo || batchCount < 1 || batchStride < 0) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  spMatDescr->m.batch = batchCount;
  spMatDescr->m.offsets_stride = batchStride;
  spMatDescr->m.values_stride = batchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatGetSize(cusparseConstSpMatDescr_t spMatDescr, int64_t* rows, int64_t* cols,
                                                  int64_t* nnz) {
  if (!live(spMatDescr) || !rows || !cols || !nnz) return CUSPARSE_STATUS_INVALID_VALUE;
  *rows = spMatDescr->m.rows;
  *cols = spMatDescr->m.cols;
  *nnz = spMatDescr->m.nnz;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatGetFormat(cusparseConstSpMatDescr_t spMatDescr, cusparseFormat_t* format) {
  if (!live(spMatDescr) || !format) return CUSPARSE_STATUS_INVALID_VALUE;
  *format = static_cast<cusparseFormat_t>(spMatDescr->m.format);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatGetIndexBase(cusparseConstSpMatDescr_t spMatDescr,
                                                       cusparseIndexBase_t* idxBase) {
  if (!live(spMatDescr) || !idxBase) return CUSPARSE_STATUS_INVALID_VALUE;
  *idxBase = static_cast<cusparseIndexBase_t>(spMatDescr->m.base);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatGetValues(cusparseSpMatDescr_t spMatDescr, void** values) {
  if (!live(spMatDescr) || !values) return CUSPARSE_STATUS_INVALID_VALUE;
  *values = reinterpret_cast<void*>(static_cast<uintptr_t>(spMatDescr->m.values));
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatSetValues(cusparseSpMatDescr_t spMatDescr, void* values) {
  if (!live(spMatDescr)) return CUSPARSE_STATUS_INVALID_VALUE;
  spMatDescr->m.values = reinterpret_cast<uintptr_t>(values);
  return CUSPARSE_STATUS_SUCCESS;
}

// Fill mode and diagonal type are what the generic API's triangular solvers
// read; SpMM and SpMV ignore them, but they travel with the descriptor.
RGPU_EXPORT cusparseStatus_t cusparseSpMatSetAttribute(cusparseSpMatDescr_t spMatDescr,
                                                       cusparseSpMatAttribute_t attribute, void* data,
                                                       size_t dataSize) {
  if (!live(spMatDescr) || !data || dataSize != sizeof(int32_t)) return CUSPARSE_STATUS_INVALID_VALUE;
  int32_t v = *static_cast<const int32_t*>(data);
  if (attribute == CUSPARSE_SPMAT_FILL_MODE && (v == CUSPARSE_FILL_MODE_LOWER || v == CUSPARSE_FILL_MODE_UPPER)) {
    spMatDescr->m.fill_mode = v;
    spMatDescr->m.attrs_set |= 1;
  } else if (attribute == CUSPARSE_SPMAT_DIAG_TYPE && (v == CUSPARSE_DIAG_TYPE_NON_UNIT || v == CUSPARSE_DIAG_TYPE_UNIT)) {
    spMatDescr->m.diag_type = v;
    spMatDescr->m.attrs_set |= 2;
  } else {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseSpMatGetAttribute(cusparseConstSpMatDescr_t spMatDescr,
                                                       cusparseSpMatAttribute_t attribute, void* data,
                                                       size_t dataSize) {
  if (!live(spMatDescr) || !data || dataSize != sizeof(int32_t)) return CUSPARSE_STATUS_INVALID_VALUE;
  if (attribute == CUSPARSE_SPMAT_FILL_MODE) {
    *static_cast<int32_t*>(data) = spMatDescr->m.fill_mode;
  } else if (attribute == CUSPARSE_SPMAT_DIAG_TYPE) {
    *static_cast<int32_t*>(data) = spMatDescr->m.diag_type;
  } else {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCreateDnMat(cusparseDnMatDescr_t* dnMatDescr, int64_t rows, int64_t cols,
                                                 int64_t ld, void* values, cudaDataType valueType,
                                                 cusparseOrder_t order) {
  if (!dnMatDescr || rows < 0 || cols < 0 || !value_type_ok(valueType) ||
      (order != CUSPARSE_ORDER_COL && order != CUSPARSE_ORDER_ROW)) {
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  auto* d = new (std::nothrow) cusparseDnMatDescr();
  if (!d) return CUSPARSE_STATUS_ALLOC_FAILED;
  d->m = sw::dense_matrix(rows, cols, ld, reinterpret_cast<uintptr_t>(values), valueType, order);
  *dnMatDescr = d;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDestroyDnMat(cusparseConstDnMatDescr_t dnMatDescr) { return destroy(dnMatDescr); }

RGPU_EXPORT cusparseStatus_t cusparseDnMatSetStridedBatch(cusparseDnMatDescr_t dnMatDescr, int batchCount,
                                                          int64_t batchStride) {
  if (!live(dnMatDescr) || batchCount < 1 || batchStride < 0) return CUSPARSE_STATUS_INVALID_VALUE;
  dnMatDescr->m.batch = batchCount;
  dnMatDescr->m.stride = batchStride;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnMatGet(cusparseDnMatDescr_t dnMatDescr, int64_t* rows, int64_t* cols,
                                              int64_t* ld, void** values, cudaDataType* type,
                                              cusparseOrder_t* order) {
  if (!live(dnMatDescr) || !rows || !cols || !ld || !values || !type || !order) return CUSPARSE_STATUS_INVALID_VALUE;
  const sw::DnMat& m = dnMatDescr->m;
  *rows = m.rows;
  *cols = m.cols;
  *ld = m.ld;
  *values = reinterpret_cast<void*>(static_cast<uintptr_t>(m.values));
  *type = static_cast<cudaDataType>(m.value_type);
  *order = static_cast<cusparseOrder_t>(m.order);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnMatGetValues(cusparseDnMatDescr_t dnMatDescr, void** values) {
  if (!live(dnMatDescr) || !values) return CUSPARSE_STATUS_INVALID_VALUE;
  *values = reinterpret_cast<void*>(static_cast<uintptr_t>(dnMatDescr->m.values));
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnMatSetValues(cusparseDnMatDescr_t dnMatDescr, void* values) {
  if (!live(dnMatDescr)) return CUSPARSE_STATUS_INVALID_VALUE;
  dnMatDescr->m.values = reinterpret_cast<uintptr_t>(values);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseCreateDnVec(cusparseDnVecDescr_t* dnVecDescr, int64_t size, void* values,
                                                 cudaDataType valueType) {
  if (!dnVecDescr || size < 0 || !value_type_ok(valueType)) return CUSPARSE_STATUS_INVALID_VALUE;
  auto* d = new (std::nothrow) cusparseDnVecDescr();
  if (!d) return CUSPARSE_STATUS_ALLOC_FAILED;
  d->v = sw::dense_vector(size, reinterpret_cast<uintptr_t>(values), valueType);
  *dnVecDescr = d;
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDestroyDnVec(cusparseConstDnVecDescr_t dnVecDescr) { return destroy(dnVecDescr); }

RGPU_EXPORT cusparseStatus_t cusparseDnVecGet(cusparseDnVecDescr_t dnVecDescr, int64_t* size, void** values,
                                              cudaDataType* valueType) {
  if (!live(dnVecDescr) || !size || !values || !valueType) return CUSPARSE_STATUS_INVALID_VALUE;
  *size = dnVecDescr->v.size;
  *values = reinterpret_cast<void*>(static_cast<uintptr_t>(dnVecDescr->v.values));
  *valueType = static_cast<cudaDataType>(dnVecDescr->v.value_type);
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnVecGetValues(cusparseDnVecDescr_t dnVecDescr, void** values) {
  if (!live(dnVecDescr) || !values) return CUSPARSE_STATUS_INVALID_VALUE;
  *values = reinterpret_cast<void*>(static_cast<uintptr_t>(dnVecDescr->v.values));
  return CUSPARSE_STATUS_SUCCESS;
}

RGPU_EXPORT cusparseStatus_t cusparseDnVecSetValues(cusparseDnVecDescr_t dnVecDescr, void* values) {
  if (!live(dnVecDescr)) return CUSPARSE_STATUS_INVALID_VALUE;
  dnVecDescr->v.values = reinterpret_cast<uintptr_t>(values);
  return CUSPARSE_STATUS_SUCCESS;
}

namespace {

struct StatusText {
  cusparseStatus_t status;
  const char* name;
  const char* text;
};
constexpr StatusText kStatusTexts[] = {
    {CUSPARSE_STATUS_SUCCESS, "CUSPARSE_STATUS_SUCCESS", "success"},
    {CUSPARSE_STATUS_NOT_INITIALIZED, "CUSPARSE_STATUS_NOT_INITIALIZED", "initialization error"},
    {CUSPARSE_STATUS_ALLOC_FAILED, "CUSPARSE_STATUS_ALLOC_FAILED", "out of memory"},
    {CUSPARSE_STATUS_INVALID_VALUE, "CUSPARSE_STATUS_INVALID_VALUE", "invalid value"},
    {CUSPARSE_STATUS_ARCH_MISMATCH, "CUSPARSE_STATUS_ARCH_MISMATCH", "architecture mismatch"},
    {CUSPARSE_STATUS_MAPPING_ERROR, "CUSPARSE_STATUS_MAPPING_ERROR", "mapping error"},
    {CUSPARSE_STATUS_EXECUTION_FAILED, "CUSPARSE_STATUS_EXECUTION_FAILED", "execution failed"},
    {CUSPARSE_STATUS_INTERNAL_ERROR, "CUSPARSE_STATUS_INTERNAL_ERROR", "internal error"},
    {CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED, "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED", "matrix type not supported"},
    {CUSPARSE_STATUS_ZERO_PIVOT, "CUSPARSE_STATUS_ZERO_PIVOT", "zero pivot"},
    {CUSPARSE_STATUS_NOT_SUPPORTED, "CUSPARSE_STATUS_NOT_SUPPORTED", "operation not supported"},
    {CUSPARSE_STATUS_INSUFFICIENT_RESOURCES, "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES", "insufficient resources"},
};

const StatusText* find_status(cusparseStatus_t s) {
  for (const StatusText& t : kStatusTexts) {
    if (t.status == s) return &t;
  }
  return nullptr;
}

}  // namespace

RGPU_EXPORT const char* cusparseGetErrorName(cusparseStatus_t status) {
  const StatusText* t = find_status(status);
  return t ? t->name : "CUSPARSE_STATUS_UNKNOWN";
}

RGPU_EXPORT const char* cusparseGetErrorString(cusparseStatus_t status) {
  const StatusText* t = find_status(status);
  return t ? t->text : "unknown error";
}
