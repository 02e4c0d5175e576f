// Entry points: stream attributes, the persisting-L2 reset and the profiler
// switches. The CPU device has no L2 to partition and no profiler: access
// policy windows, synchronization policies and memory-sync domains are
// checked as a GPU checks them, kept on the stream and read back; they
// change nothing about how work runs. Priorities are the stream's own.
#include <algorithm>
#include <cstring>

#include "api_common.h"
#include "spec.h"

using namespace rgpu::cpudev;

namespace {

CUresult find_stream(CUstream h, std::shared_ptr<Stream>* s) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  std::shared_ptr<Context> current, ctx;
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    RGPU_CU_TRY(enter(&d, &current));
  }
  return resolve_stream(d, current, h, &ctx, s);
}

bool valid_access_property(CUaccessProperty p) {
  return p == CU_ACCESS_PROPERTY_NORMAL || p == CU_ACCESS_PROPERTY_STREAMING || p == CU_ACCESS_PROPERTY_PERSISTING;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamSetAttribute(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return guarded([&] {
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(find_stream(h, &s));
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    Stream::Attributes a = s->attributes();
    switch (attr) {
      case CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
        const CUaccessPolicyWindow& w = value->accessPolicyWindow;
        if (w.num_bytes > static_cast<size_t>(kSpec.max_access_policy_window_bytes) || !(w.hitRatio >= 0.f && w.hitRatio <= 1.f) ||
            !valid_access_property(w.hitProp) || !valid_access_property(w.missProp) ||
            w.missProp == CU_ACCESS_PROPERTY_PERSISTING)
          return CUDA_ERROR_INVALID_VALUE;
        a.window = w;
        break;
      }
      case CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        if (value->syncPolicy < CU_SYNC_POLICY_AUTO || value->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
          return CUDA_ERROR_INVALID_VALUE;
        a.sync_policy = value->syncPolicy;
        break;
      case CU_STREAM_ATTRIBUTE_PRIORITY:
        // Clamped to cuCtxGetStreamPriorityRange's [-5, 0], as at creation.
        s->set_priority(std::clamp(value->priority, -5, 0));
        return CUDA_SUCCESS;
      case CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        a.domain_map = value->memSyncDomainMap;
        break;
      case CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN:
        if (value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
            value->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
          return CUDA_ERROR_INVALID_VALUE;
        a.domain = value->memSyncDomain;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    s->set_attributes(a);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuStreamGetAttribute(CUstream h, CUstreamAttrID attr, CUstreamAttrValue* out) {
  return guarded([&] {
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(find_stream(h, &s));
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Stream::Attributes a = s->attributes();
    CUstreamAttrValue v;
    memset(&v, 0, sizeof(v));
    switch (attr) {
      case CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW: v.accessPolicyWindow = a.window; break;
      case CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY: v.syncPolicy = a.sync_policy; break;
      case CU_STREAM_ATTRIBUTE_PRIORITY: v.priority = s->priority(); break;
      case CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: v.memSyncDomainMap = a.domain_map; break;
      case CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN: v.memSyncDomain = a.domain; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    *out = v;
    return CUDA_SUCCESS;
  });
}

// Nothing persists in an L2 the device does not have.
CUresult CUDAAPI cuCtxResetPersistingL2Cache() {
  Driver* d;
  std::shared_ptr<Context> ctx;
  RGPU_CU_TRY(enter(&d, &ctx));
  return CUDA_SUCCESS;
}

// No profiler to switch: both succeed once the driver is initialised.
CUresult CUDAAPI cuProfilerStart() {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuProfilerStop() {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  return CUDA_SUCCESS;
}

}  // extern "C"
