// Runtime API: stream attributes and the persisting-L2 reset, on the
// driver's calls. cudaStreamAttrValue and CUstreamAttrValue are the same
// 64-byte union with the same members and enumerator values, so the value
// passes through unchanged.
#include <cstring>

#include "runtime.h"

using namespace rgpu::runtime;

static_assert(sizeof(cudaStreamAttrValue) == sizeof(CUstreamAttrValue));
static_assert(sizeof(cudaAccessPolicyWindow) == sizeof(CUaccessPolicyWindow));
static_assert(static_cast<int>(cudaStreamAttributePriority) == static_cast<int>(CU_STREAM_ATTRIBUTE_PRIORITY));
static_assert(static_cast<int>(cudaStreamAttributeAccessPolicyWindow) ==
              static_cast<int>(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW));

namespace {

cudaError_t set_attribute(cudaStream_t s, cudaStreamAttrID attr, const cudaStreamAttrValue* value, bool per_thread) {
  RT_BEGIN
  if (!value) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUstreamAttrValue v;
  memcpy(&v, value, sizeof(v));
  CUresult r = cuStreamSetAttribute(driver_stream(s, per_thread), static_cast<CUstreamAttrID>(attr), &v);
  if (r != CUDA_SUCCESS) return record(r);
  if (attr == cudaStreamAttributePriority && s != nullptr) {
    // cudaStreamGetPriority answers from the runtime's own record.
    CUstreamAttrValue now;
    if (cuStreamGetAttribute(driver_stream(s, per_thread), CU_STREAM_ATTRIBUTE_PRIORITY, &now) == CUDA_SUCCESS)
      state().set_stream_priority(s, now.priority);
  }
  return cudaSuccess;
  RT_END
}

cudaError_t get_attribute(cudaStream_t s, cudaStreamAttrID attr, cudaStreamAttrValue* out, bool per_thread) {
  RT_BEGIN
  if (!out) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUstreamAttrValue v;
  memset(&v, 0, sizeof(v));
  CUresult r = cuStreamGetAttribute(driver_stream(s, per_thread), static_cast<CUstreamAttrID>(attr), &v);
  if (r != CUDA_SUCCESS) return record(r);
  memcpy(out, &v, sizeof(v));
  return cudaSuccess;
  RT_END
}

}  // namespace

RGPU_RT_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID attr,
                                                  const cudaStreamAttrValue* value) {
  return set_attribute(s, attr, value, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t s, cudaStreamAttrID attr,
                                                       const cudaStreamAttrValue* value) {
  return set_attribute(s, attr, value, true);
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaStreamAttrID attr, cudaStreamAttrValue* out) {
  return get_attribute(s, attr, out, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t s, cudaStreamAttrID attr,
                                                       cudaStreamAttrValue* out) {
  return get_attribute(s, attr, out, true);
}

RGPU_RT_EXPORT cudaError_t cudaCtxResetPersistingL2Cache() {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuCtxResetPersistingL2Cache());
  RT_END
}
