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
#include "rgpu/protocol/cusparse_wire.h"

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

// The generic API's descriptors are the wire's records (rgpu/protocol/
// cusparse_wire.h), the same the client keeps and sends: one definition of
// each bag. A CSR or COO matrix (`rows_ptr`: CSR's row offsets or COO's row
// indices), a dense matrix, a dense vector.
struct cusparseSpMatDescr : rgpu::protocol::cusparse::SpMat {};
struct cusparseDnMatDescr : rgpu::protocol::cusparse::DnMat {};
struct cusparseDnVecDescr : rgpu::protocol::cusparse::DnVec {};

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
