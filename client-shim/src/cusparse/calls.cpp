// cuSPARSE's SpMM, SpMV and SDDMM on the client: one message each with the
// descriptors inside (rgpu/protocol/cusparse_wire.h); the products and
// SDDMM's preprocess are one-way, the buffer size queries one round trip.
#include <cstring>

#include "../library_calls.h"
#include "api_common.h"
#include "cusparse_client.h"
#include "rgpu/protocol/codec.h"

namespace sw = rgpu::protocol::cusparse;
using rgpu::shim::cusparse::live;

namespace rgpu::shim::cusparse {
namespace {

constexpr auto kApi = wire::Api::CUSPARSE;
constexpr uint64_t kMaxReply = 64;

// alpha or beta: the pointer mode the client holds for the handle, then the
// value (host mode, as many bytes as the compute type's element) or the
// address (device mode); rgpud checks the mode against the handle's.
bool pack_scalar(protocol::ArgWriter& w, uint32_t mode, const void* p, cudaDataType compute) {
  w.u64(mode);
  if (mode == sw::kPointerDevice) {
    w.u64(reinterpret_cast<uintptr_t>(p));
    return true;
  }
  const uint64_t bytes = rgpu_data_type_bytes(compute);
  if (bytes == kNoExtent || bytes > 16) return false;
  w.buffer(p, bytes);
  return true;
}

struct Entered {
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  uint64_t handle = 0;
};

cusparseStatus_t enter(cusparseHandle_t handle, Entered* e) {
  if (!library_enter(&e->shim, &e->ctx)) return CUSPARSE_STATUS_EXECUTION_FAILED;
  e->handle = handle_of(handle);
  if (!e->shim->has_handle(e->handle, static_cast<protocol::HandleKind>(sw::kHandleKind))) {
    return CUSPARSE_STATUS_NOT_INITIALIZED;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

void send_async(const Entered& e, uint32_t function, const protocol::ArgWriter& args) {
  const Route route = e.shim->route_handle(e.handle, e.ctx);
  const auto& bytes = args.bytes();
  route.client->call_async(route.ctx, [&](wire::Call::Builder call) {
    protocol::set_invoke(call, kApi, function, bytes, false);
  });
}

cusparseStatus_t send_size_query(const Entered& e, uint32_t function, const protocol::ArgWriter& args,
                                 size_t* size) {
  const Route route = e.shim->route_handle(e.handle, e.ctx);
  const auto& bytes = args.bytes();
  std::vector<std::byte> buf(kMaxReply);
  uint64_t got = 0;
  SyncResult r = route.client->call_sync(
      route.ctx, [&](wire::Call::Builder call) { protocol::set_invoke(call, kApi, function, bytes, true); }, {},
      OutBuffer{buf.data(), buf.size(), &got});
  if (r.code != 0) {
    return static_cast<cusparseStatus_t>(library_status(r, kApi, CUSPARSE_STATUS_EXECUTION_FAILED));
  }
  protocol::ArgReader rd(std::span<const std::byte>(buf.data(), got));
  uint64_t v = 0;
  rd.u64(&v);
  if (!rd.finish()) return CUSPARSE_STATUS_EXECUTION_FAILED;
  *size = static_cast<size_t>(v);
  return CUSPARSE_STATUS_SUCCESS;
}

// SpMM and its size query share everything but the last argument.
cusparseStatus_t spmm(cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void* alpha,
                      cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void* beta,
                      cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t alg,
                      void* externalBuffer, size_t* bufferSize) {
  Entered e;
  if (cusparseStatus_t s = enter(handle, &e); s != CUSPARSE_STATUS_SUCCESS) return s;
  if (!alpha || !beta || !live(matA) || !live(matB) || !live(matC)) return CUSPARSE_STATUS_INVALID_VALUE;
  const uint32_t mode = e.shim->handle_mode(e.handle);
  protocol::ArgWriter w;
  w.u64(e.handle);
  w.scalar(static_cast<int32_t>(opA));
  w.scalar(static_cast<int32_t>(opB));
  w.scalar(static_cast<int32_t>(computeType));
  w.scalar(static_cast<int32_t>(alg));
  if (!pack_scalar(w, mode, alpha, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, matA->m);
  sw::write(w, matB->m);
  if (!pack_scalar(w, mode, beta, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, matC->m);
  if (bufferSize) return send_size_query(e, sw::kSpMMBufferSize, w, bufferSize);
  w.u64(reinterpret_cast<uintptr_t>(externalBuffer));
  send_async(e, sw::kSpMM, w);
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t spmv(cusparseHandle_t handle, cusparseOperation_t opA, const void* alpha,
                      cusparseConstSpMatDescr_t matA, cusparseConstDnVecDescr_t vecX, const void* beta,
                      cusparseDnVecDescr_t vecY, cudaDataType computeType, cusparseSpMVAlg_t alg,
                      void* externalBuffer, size_t* bufferSize) {
  Entered e;
  if (cusparseStatus_t s = enter(handle, &e); s != CUSPARSE_STATUS_SUCCESS) return s;
  if (!alpha || !beta || !live(matA) || !live(vecX) || !live(vecY)) return CUSPARSE_STATUS_INVALID_VALUE;
  const uint32_t mode = e.shim->handle_mode(e.handle);
  protocol::ArgWriter w;
  w.u64(e.handle);
  w.scalar(static_cast<int32_t>(opA));
  w.scalar(static_cast<int32_t>(computeType));
  w.scalar(static_cast<int32_t>(alg));
  if (!pack_scalar(w, mode, alpha, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, matA->m);
  sw::write(w, vecX->v);
  if (!pack_scalar(w, mode, beta, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, vecY->v);
  if (bufferSize) return send_size_query(e, sw::kSpMVBufferSize, w, bufferSize);
  w.u64(reinterpret_cast<uintptr_t>(externalBuffer));
  send_async(e, sw::kSpMV, w);
  return CUSPARSE_STATUS_SUCCESS;
}

// SDDMM, its preprocess (function kSDDMMPreprocess) and its size query.
cusparseStatus_t sddmm(uint32_t function, cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB,
                       const void* alpha, cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                       const void* beta, cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t alg,
                       void* externalBuffer, size_t* bufferSize) {
  Entered e;
  if (cusparseStatus_t s = enter(handle, &e); s != CUSPARSE_STATUS_SUCCESS) return s;
  if (!alpha || !beta || !live(matA) || !live(matB) || !live(matC)) return CUSPARSE_STATUS_INVALID_VALUE;
  const uint32_t mode = e.shim->handle_mode(e.handle);
  protocol::ArgWriter w;
  w.u64(e.handle);
  w.scalar(static_cast<int32_t>(opA));
  w.scalar(static_cast<int32_t>(opB));
  w.scalar(static_cast<int32_t>(computeType));
  w.scalar(static_cast<int32_t>(alg));
  if (!pack_scalar(w, mode, alpha, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, matA->m);
  sw::write(w, matB->m);
  if (!pack_scalar(w, mode, beta, computeType)) return CUSPARSE_STATUS_NOT_SUPPORTED;
  sw::write(w, matC->m);
  if (bufferSize) return send_size_query(e, sw::kSDDMMBufferSize, w, bufferSize);
  w.u64(reinterpret_cast<uintptr_t>(externalBuffer));
  send_async(e, function, w);
  return CUSPARSE_STATUS_SUCCESS;
}

}  // namespace
}  // namespace rgpu::shim::cusparse

RGPU_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                     cusparseOperation_t opB, const void* alpha,
                                                     cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                     const void* beta, cusparseDnMatDescr_t matC,
                                                     cudaDataType computeType, cusparseSpMMAlg_t alg,
                                                     size_t* bufferSize) {
  if (!bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
  try {
    return rgpu::shim::cusparse::spmm(handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg, nullptr,
                                      bufferSize);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB,
                                          const void* alpha, cusparseConstSpMatDescr_t matA,
                                          cusparseConstDnMatDescr_t matB, const void* beta,
                                          cusparseDnMatDescr_t matC, cudaDataType computeType,
                                          cusparseSpMMAlg_t alg, void* externalBuffer) {
  try {
    return rgpu::shim::cusparse::spmm(handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg,
                                      externalBuffer, nullptr);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSpMV_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                     const void* alpha, cusparseConstSpMatDescr_t matA,
                                                     cusparseConstDnVecDescr_t vecX, const void* beta,
                                                     cusparseDnVecDescr_t vecY, cudaDataType computeType,
                                                     cusparseSpMVAlg_t alg, size_t* bufferSize) {
  if (!bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
  try {
    return rgpu::shim::cusparse::spmv(handle, opA, alpha, matA, vecX, beta, vecY, computeType, alg, nullptr,
                                      bufferSize);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSpMV(cusparseHandle_t handle, cusparseOperation_t opA, const void* alpha,
                                          cusparseConstSpMatDescr_t matA, cusparseConstDnVecDescr_t vecX,
                                          const void* beta, cusparseDnVecDescr_t vecY, cudaDataType computeType,
                                          cusparseSpMVAlg_t alg, void* externalBuffer) {
  try {
    return rgpu::shim::cusparse::spmv(handle, opA, alpha, matA, vecX, beta, vecY, computeType, alg, externalBuffer,
                                      nullptr);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSDDMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t opA,
                                                      cusparseOperation_t opB, const void* alpha,
                                                      cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                      const void* beta, cusparseSpMatDescr_t matC,
                                                      cudaDataType computeType, cusparseSDDMMAlg_t alg,
                                                      size_t* bufferSize) {
  if (!bufferSize) return CUSPARSE_STATUS_INVALID_VALUE;
  try {
    return rgpu::shim::cusparse::sddmm(sw::kSDDMMBufferSize, handle, opA, opB, alpha, matA, matB, beta, matC,
                                       computeType, alg, nullptr, bufferSize);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSDDMM_preprocess(cusparseHandle_t handle, cusparseOperation_t opA,
                                                      cusparseOperation_t opB, const void* alpha,
                                                      cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB,
                                                      const void* beta, cusparseSpMatDescr_t matC,
                                                      cudaDataType computeType, cusparseSDDMMAlg_t alg,
                                                      void* externalBuffer) {
  try {
    return rgpu::shim::cusparse::sddmm(sw::kSDDMMPreprocess, handle, opA, opB, alpha, matA, matB, beta, matC,
                                       computeType, alg, externalBuffer, nullptr);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cusparseStatus_t cusparseSDDMM(cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB,
                                           const void* alpha, cusparseConstDnMatDescr_t matA,
                                           cusparseConstDnMatDescr_t matB, const void* beta,
                                           cusparseSpMatDescr_t matC, cudaDataType computeType,
                                           cusparseSDDMMAlg_t alg, void* externalBuffer) {
  try {
    return rgpu::shim::cusparse::sddmm(sw::kSDDMM, handle, opA, opB, alpha, matA, matB, beta, matC, computeType,
                                       alg, externalBuffer, nullptr);
  } catch (...) {
    return CUSPARSE_STATUS_EXECUTION_FAILED;
  }
}
