// cuBLASLt's descriptors on the server: what rgpud checks in the bags a
// client sends (rgpu/protocol/lt_desc.h) before the library sees them, and
// the library's own descriptors rebuilt from them for one call. Used by the
// generated rows of api/cublasLt.api (lt_check for each
// descriptor parameter, lt_matmul_pointers as cublasLtMatmul's check=,
// LtDescriptors after the table is known).
#pragma once

#include <cublasLt.h>

#include <cstdint>

#include "call_env.h"
#include "dispatch.h"
#include "library_tables.h"
#include "rgpu/protocol/lt_desc.h"

namespace rgpu::server {

// Whether rgpud can check and pass on descriptor `d`; a refusal (code != 0)
// otherwise, prefixed by `what`. CUBLAS_STATUS_NOT_SUPPORTED for what rgpu
// does not check: a refused attribute set (cuBLASLt 12's 27-30, the
// epilogue's auxiliary buffer, block scales, an emulation descriptor), an
// epilogue other than bias/ReLU/GELU and their combinations, a vector
// pointer mode, a layout that is not a strided column- or row-major batch of
// a known type at a stride that is not negative. CUBLAS_STATUS_INVALID_VALUE
// for a layout no matrix has (batch count below 1, ld below the stored rows).
InvokeOutcome lt_check(wire::Api api, const char* what, const protocol::lt::Desc& d);

// cublasLtMatmul's pointers inside its matmul descriptor, against the
// calling context's memory: the bias (D's rows of the bias type, for each
// batch at its stride) when the epilogue reads one, and each scale factor
// and amax (one value of the compute type's scalar). Run after lt_check.
InvokeOutcome lt_matmul_pointers(const CallEnv& env, wire::Api api, const protocol::lt::Desc& op,
                                 const protocol::lt::Desc& a, const protocol::lt::Desc& b,
                                 const protocol::lt::Desc& c, const protocol::lt::Desc& d);

// The library's descriptors of one call, created and filled through the
// table from checked bags, destroyed through it when this goes (the row's
// end: cuBLASLt reads a descriptor during the call, never after). Not
// thread-safe; lives on the row's stack.
class LtDescriptors {
 public:
  explicit LtDescriptors(const CublasLtTable& table) : table_(table) {}
  ~LtDescriptors();
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;

  // The rebuilt descriptor, or null (status() says why: the library's
  // status, or not supported when it lacks a function).
  cublasLtMatmulDesc_t matmul(const protocol::lt::Desc& d);
  cublasLtMatrixLayout_t layout(const protocol::lt::Desc& d);
  cublasLtMatmulPreference_t preference(const protocol::lt::Desc& d);
  uint32_t status() const { return status_; }

 private:
  static constexpr int kMax = 8;  // the most descriptors of a kind a call takes (layouts: 4)

  const CublasLtTable& table_;
  cublasLtMatmulDesc_t matmuls_[kMax] = {};
  cublasLtMatrixLayout_t layouts_[kMax] = {};
  cublasLtMatmulPreference_t preferences_[kMax] = {};
  int n_matmuls_ = 0, n_layouts_ = 0, n_preferences_ = 0;
  uint32_t status_ = CUBLAS_STATUS_SUCCESS;
};

}  // namespace rgpu::server
