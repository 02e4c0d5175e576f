// The stand-in's cuSPARSE objects (opaque in NVIDIA's headers, defined
// here): the handle and the generic API's descriptors; the export marker and
// the wrapper that keeps exceptions off the C ABI.
#pragma once

#include <cuda.h>
#include <cusparse.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>

#include "rgpu/common/log.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

// One cuSPARSE handle: the context it was created in, its stream and
// pointer mode. Work that finds a bad index in a matrix sets `failed`
// (shared with queued work, which may outlive the handle); the handle's
// next call answers CUSPARSE_STATUS_EXECUTION_FAILED, as a GPU reports an
// asynchronous fault at a later call. Thread safety: as cuSPARSE, a handle
// is not reconfigured (Set*) concurrently with its use.
struct cusparseContext {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
  cusparsePointerMode_t pointer_mode = CUSPARSE_POINTER_MODE_HOST;
  std::shared_ptr<std::atomic<bool>> failed = std::make_shared<std::atomic<bool>>(false);
};

// A CSR or COO matrix; `rows_ptr` is CSR's row offsets or COO's row indices.
struct cusparseSpMatDescr {
  cusparseFormat_t format = CUSPARSE_FORMAT_CSR;
  int64_t rows = 0, cols = 0, nnz = 0;
  CUdeviceptr rows_ptr = 0, cols_ptr = 0, values = 0;
  cusparseIndexType_t offsets_type = CUSPARSE_INDEX_32I;
  cusparseIndexType_t index_type = CUSPARSE_INDEX_32I;
  cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO;
  cudaDataType value_type = CUDA_R_32F;
  int batch = 1;
  int64_t offsets_stride = 0;  // elements between batches of rows_ptr
  int64_t values_stride = 0;   // elements between batches of cols_ptr and values
  int32_t fill_mode = 0, diag_type = 0;
};

struct cusparseDnMatDescr {
  int64_t rows = 0, cols = 0, ld = 0;
  CUdeviceptr values = 0;
  cudaDataType value_type = CUDA_R_32F;
  cusparseOrder_t order = CUSPARSE_ORDER_COL;
  int batch = 1;
  int64_t stride = 0;
};

struct cusparseDnVecDescr {
  int64_t size = 0;
  CUdeviceptr values = 0;
  cudaDataType value_type = CUDA_R_32F;
};

namespace rgpu::cpusparse {

template <class F>
cusparseStatus_t guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    RGPU_WARN("cpu cusparse: out of host memory function=%s", function);
    return CUSPARSE_STATUS_ALLOC_FAILED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cusparse: internal error function=%s error=%s", function, e.what());
    return CUSPARSE_STATUS_INTERNAL_ERROR;
  }
}

// The handle's pending asynchronous failure, cleared as it is reported.
inline cusparseStatus_t take_failure(cusparseHandle_t h) {
  return h->failed->exchange(false) ? CUSPARSE_STATUS_EXECUTION_FAILED : CUSPARSE_STATUS_SUCCESS;
}

}  // namespace rgpu::cpusparse
