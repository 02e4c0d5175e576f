// cuBLASLt's descriptor entry points, answered on the client (cublasLt.api's
// `local` lines): a descriptor is an attribute bag in host memory, created,
// set, read and destroyed with no round trip, with cuBLASLt's sizes (a wrong
// size is CUBLAS_STATUS_INVALID_VALUE). An attribute rgpu does not pass on
// (cublasLt.api: refused) is CUBLAS_STATUS_NOT_SUPPORTED when set.
#include "cublaslt.h"

#include <cstdint>
#include <new>

#include "api_common.h"
#include "unimplemented.h"

namespace rgpu::shim {
namespace {

namespace lt = protocol::lt;
namespace attr = protocol::lt::attr;

lt::Desc* bag(void* d, uint32_t kind) {
  auto* b = static_cast<lt::Desc*>(d);
  return b && b->magic == lt::Desc::kMagic && b->kind == kind ? b : nullptr;
}

template <class Handle>
cublasStatus_t create(Handle* out, uint32_t kind, lt::Desc** made) {
  if (!out) return CUBLAS_STATUS_INVALID_VALUE;
  auto* b = new (std::nothrow) lt::Desc();
  if (!b) return CUBLAS_STATUS_ALLOC_FAILED;
  b->kind = kind;
  *made = b;
  *out = reinterpret_cast<Handle>(b);
  return CUBLAS_STATUS_SUCCESS;
}

// Sets a value the create call takes (its type is the attribute's).
template <class T>
void preset(lt::Desc* b, uint32_t id, T v) {
  lt::set_attr(*b, id, &v, sizeof v);
}

cublasStatus_t destroy(void* d, uint32_t kind) {
  lt::Desc* b = bag(d, kind);
  if (!b) return d ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
  b->magic = 0;  // a stale pointer then fails bag() while its memory is unchanged
  delete b;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t set(void* d, uint32_t kind, uint32_t id, const void* buf, size_t size) {
  lt::Desc* b = bag(d, kind);
  if (!b) return CUBLAS_STATUS_INVALID_VALUE;
  switch (lt::set_attr(*b, id, buf, size)) {
    case lt::AttrStatus::kOk: return CUBLAS_STATUS_SUCCESS;
    case lt::AttrStatus::kRefused:
      return static_cast<cublasStatus_t>(report_unimplemented(lt::find_attr(kind, id)->name,
                                                              CUBLAS_STATUS_NOT_SUPPORTED,
                                                              "CUBLAS_STATUS_NOT_SUPPORTED"));
    case lt::AttrStatus::kInvalid: break;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t get(void* d, uint32_t kind, uint32_t id, void* buf, size_t size, size_t* written) {
  const lt::Desc* b = bag(d, kind);
  if (!b) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::get_attr(*b, id, buf, size, written) == lt::AttrStatus::kOk ? CUBLAS_STATUS_SUCCESS
                                                                          : CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace

const lt::Desc* lt_desc(cublasLtMatmulDesc_t d) { return bag(d, attr::kMatmul); }
const lt::Desc* lt_desc(cublasLtMatrixLayout_t d) { return bag(d, attr::kLayout); }
const lt::Desc* lt_desc(cublasLtMatmulPreference_t d) { return bag(d, attr::kPreference); }

}  // namespace rgpu::shim

using rgpu::protocol::lt::attr::kLayout;
using rgpu::protocol::lt::attr::kMatmul;
using rgpu::protocol::lt::attr::kPreference;
namespace ltattr = rgpu::protocol::lt::attr;

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                                    cudaDataType_t scaleType) {
  rgpu::protocol::lt::Desc* b = nullptr;
  const cublasStatus_t st = rgpu::shim::create(matmulDesc, kMatmul, &b);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, static_cast<int32_t>(computeType));
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATMUL_DESC_SCALE_TYPE, static_cast<int32_t>(scaleType));
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return rgpu::shim::destroy(matmulDesc, kMatmul);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                          cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                          size_t sizeInBytes) {
  return rgpu::shim::set(matmulDesc, kMatmul, static_cast<uint32_t>(attr), buf, sizeInBytes);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                          cublasLtMatmulDescAttributes_t attr, void* buf,
                                                          size_t sizeInBytes, size_t* sizeWritten) {
  return rgpu::shim::get(matmulDesc, kMatmul, static_cast<uint32_t>(attr), buf, sizeInBytes, sizeWritten);
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                                      uint64_t rows, uint64_t cols, int64_t ld) {
  rgpu::protocol::lt::Desc* b = nullptr;
  const cublasStatus_t st = rgpu::shim::create(matLayout, kLayout, &b);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<uint32_t>(type));
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  rgpu::shim::preset(b, ltattr::CUBLASLT_MATRIX_LAYOUT_LD, ld);
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return rgpu::shim::destroy(matLayout, kLayout);
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                            cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                            size_t sizeInBytes) {
  return rgpu::shim::set(matLayout, kLayout, static_cast<uint32_t>(attr), buf, sizeInBytes);
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                            cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                            size_t sizeInBytes, size_t* sizeWritten) {
  return rgpu::shim::get(matLayout, kLayout, static_cast<uint32_t>(attr), buf, sizeInBytes, sizeWritten);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  rgpu::protocol::lt::Desc* b = nullptr;
  return rgpu::shim::create(pref, kPreference, &b);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return rgpu::shim::destroy(pref, kPreference);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                cublasLtMatmulPreferenceAttributes_t attr,
                                                                const void* buf, size_t sizeInBytes) {
  return rgpu::shim::set(pref, kPreference, static_cast<uint32_t>(attr), buf, sizeInBytes);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                                cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                                size_t sizeInBytes, size_t* sizeWritten) {
  return rgpu::shim::get(pref, kPreference, static_cast<uint32_t>(attr), buf, sizeInBytes, sizeWritten);
}
