// The implemented CUDA driver API entry points: answered locally from state
// fetched once, or forwarded to rgpud as async (batched) or sync calls.
#include <cuda.h>

#include <cstring>

#include "rgpu/common/log.h"
#include "api_common.h"
#include "peer_copy.h"

// These names are both exported as they are (the oldest ABI, with the same
// signature) and mapped by cuda.h to their _v2 successors: define both.
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags
#undef cuDevicePrimaryCtxReset
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent

using rgpu::protocol::HostStepKind;
using rgpu::shim::Client;
using rgpu::shim::ContextInfo;
using rgpu::shim::current_context;
using rgpu::shim::HandleKind;
using rgpu::shim::OutBuffer;
using rgpu::shim::Shim;
using rgpu::shim::SyncResult;
namespace wire = rgpu::wire;

namespace rgpu::shim {

namespace {
thread_local int t_per_thread_default = 0;
}  // namespace

PerThreadDefault::PerThreadDefault() { ++t_per_thread_default; }
PerThreadDefault::~PerThreadDefault() { --t_per_thread_default; }
bool per_thread_default() { return t_per_thread_default > 0; }

CUresult stream_handle(Shim* shim, CUstream stream, uint64_t* out) {
  uint64_t h = handle_of(stream);
  if (stream == nullptr) {
    *out = per_thread_default() ? protocol::kPerThreadStream : protocol::kNullStream;
    return CUDA_SUCCESS;
  }
  if (stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    *out = stream == CU_STREAM_LEGACY ? protocol::kLegacyStream : protocol::kPerThreadStream;
    return CUDA_SUCCESS;
  }
  if (!shim->has_handle(h, HandleKind::kStream)) return CUDA_ERROR_INVALID_HANDLE;
  *out = h;
  return CUDA_SUCCESS;
}

}  // namespace rgpu::shim

using rgpu::shim::copy_out_scope;
using rgpu::shim::handle_of;
using rgpu::shim::stream_handle;

namespace {

CUresult memcpy_htod(CUdeviceptr dst, const void* src, size_t size, CUstream stream, bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (size > 0 && !src) return CUDA_ERROR_INVALID_VALUE;
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route route = shim->route_pointer(dst, ctx);
  Client& client = *route.client;
  ctx = route.ctx;
  if (async && size > 0) {
    bool recorded = false;
    CUresult e = rgpu::shim::capture_host_step(client, ctx, s, HostStepKind::kCopyIn, nullptr, nullptr,
                                               const_cast<void*>(src), dst, size, &recorded);
    if (e != CUDA_SUCCESS || recorded) return e;
  }
  auto fill = [&](wire::Call::Builder call) {
    auto in = call.initMemcpyHtoD();
    in.setDst(dst);
    in.setSize(size);
    in.setStream(s);
    in.setAsync(async);
    if (size <= Client::kInlineLimit) in.setBytes(kj::arrayPtr(static_cast<const capnp::byte*>(src), size));
  };
  // The source is read now: first let earlier host functions of the stream,
  // which may still write it, run (CUDA reads it in stream order).
  client.wait_host_funcs(!async || rgpu::shim::is_legacy_stream(s) ? Client::kAnyStream : s);
  rgpu::transport::Bytes payload;
  if (size > Client::kInlineLimit) payload = rgpu::transport::Bytes(static_cast<const std::byte*>(src), size);
  const uint64_t chunk = client.options().pipeline_chunk;
  if (!async && chunk != 0 && size >= 2 * chunk) {
    return client.copy_in_pipelined(ctx, dst, src, size, s, chunk).result;
  }
  if (!async) return client.call_sync(ctx, fill, payload).result;
  if (!payload.empty()) return client.call_async_bulk(ctx, fill, payload);
  client.call_async(ctx, fill);
  return CUDA_SUCCESS;
  API_END
}

CUresult memcpy_dtoh(void* dst, CUdeviceptr src, size_t size, CUstream stream, bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (size > 0 && !dst) return CUDA_ERROR_INVALID_VALUE;
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route route = shim->route_pointer(src, ctx);
  Client& client = *route.client;
  ctx = route.ctx;
  if (async) {
    bool recorded = false;
    if (size > 0) {
      CUresult e = rgpu::shim::capture_host_step(client, ctx, s, HostStepKind::kCopyOut, nullptr, nullptr, dst,
                                                 src, size, &recorded);
      if (e != CUDA_SUCCESS || recorded) return e;
    }
    client.copy_out_async(ctx, src, dst, size, s);
    return CUDA_SUCCESS;
  }
  const uint64_t chunk = client.options().pipeline_chunk;
  if (chunk != 0 && size >= 2 * chunk) {
    return client.copy_out_pipelined(ctx, dst, src, size, s, chunk).result;
  }
  auto fill = [&](wire::Call::Builder call) {
    auto out = call.initMemcpyDtoH();
    out.setSrc(src);
    out.setSize(size);
    out.setStream(s);
  };
  return client.call_sync(ctx, fill, {}, OutBuffer{dst, size}).result;
  API_END
}

CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream, bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route to = shim->route_pointer(dst, ctx);
  const rgpu::shim::Route from = shim->route_pointer(src, ctx);
  // Between two servers: staged through this process (peer_copy.cpp).
  if (to.server != from.server) return rgpu::shim::copy_between_servers(*shim, to, dst, from, src, size, s, async);
  ctx = to.ctx;
  auto fill = [&](wire::Call::Builder call) {
    auto c = call.initMemcpyDtoD();
    c.setDst(dst);
    c.setSrc(src);
    c.setSize(size);
    c.setStream(s);
    c.setAsync(async);
  };
  if (!async) return to.client->call_sync(ctx, fill).result;
  to.client->call_async(ctx, fill);
  return CUDA_SUCCESS;
  API_END
}

CUresult memset_any(CUdeviceptr dst, unsigned value, unsigned element_size, size_t count, CUstream stream,
                    bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route route = shim->route_pointer(dst, ctx);
  ctx = route.ctx;
  auto fill = [&](wire::Call::Builder call) {
    auto m = call.initMemset();
    m.setDst(dst);
    m.setValue(value);
    m.setElementSize(static_cast<uint8_t>(element_size));
    m.setCount(count);
    m.setStream(s);
    m.setAsync(async);
  };
  if (!async) return route.client->call_sync(ctx, fill).result;
  route.client->call_async(ctx, fill);
  return CUDA_SUCCESS;
  API_END
}

CUresult stream_synchronize(CUstream stream) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route route = shim->route_handle(s, ctx);
  CUresult r =
      route.client->call_sync(route.ctx, [&](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(s); }).result;
  CUresult copies = route.client->wait_copy_outs(copy_out_scope(s));
  return r != CUDA_SUCCESS ? r : copies;
  API_END
}

CUresult stream_wait_event(CUstream stream, CUevent event, unsigned flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  if (!shim->has_handle(handle_of(event), HandleKind::kEvent)) return CUDA_ERROR_INVALID_HANDLE;
  const rgpu::shim::Route route = shim->route_handle(s, ctx);
  const rgpu::shim::Route of_event = shim->route_handle(handle_of(event), ctx);
  if (of_event.server != route.server) {
    // No stream can wait on another server's event: the wait happens here,
    // before anything later on the stream is sent.
    return of_event.client
        ->call_sync(of_event.ctx, [&](wire::Call::Builder c) { c.initEventSynchronize().setHandle(handle_of(event)); })
        .result;
  }
  route.client->call_async(route.ctx, [&](wire::Call::Builder c) {
    auto w = c.initStreamWaitEvent();
    w.setStream(s);
    w.setEvent(handle_of(event));
    w.setFlags(flags);
  });
  return CUDA_SUCCESS;
  API_END
}

CUresult ctx_create(CUcontext* pctx, unsigned flags, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const rgpu::shim::Route route = shim->route_device(dev);
  uint64_t h = shim->mint_handle(HandleKind::kContext, route.server);
  shim->add_context(h, ContextInfo{dev, false});
  route.client->call_async(0, [&](wire::Call::Builder c) {
    auto cc = c.initCtxCreate();
    cc.setHandle(h);
    cc.setFlags(flags);
    cc.setDevice(shim->server_ordinal(dev));
  });
  rgpu::shim::context_stack().push_back(h);
  *pctx = reinterpret_cast<CUcontext>(h);
  return CUDA_SUCCESS;
  API_END
}

CUresult ctx_destroy(CUcontext ctx) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  uint64_t h = handle_of(ctx);
  ContextInfo info;
  if (h == 0 || !shim->context_info(h, &info) || info.primary) return CUDA_ERROR_INVALID_CONTEXT;
  SyncResult r = shim->route_handle(h, 0).client->call_sync(0, [&](wire::Call::Builder c) {
    c.initCtxDestroy().setHandle(h);
  });
  shim->remove_context(h);
  auto& stack = rgpu::shim::context_stack();
  for (auto it = stack.begin(); it != stack.end();) it = *it == h ? stack.erase(it) : std::next(it);
  return r.result;
  API_END
}

CUresult primary_release(CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int n = shim->primary_release(dev);
  if (n < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (n == 0) {
    uint64_t h = rgpu::shim::route::wire_context(shim->primary_handle(dev));
    shim->route_device(dev).client->call_async(0, [&](wire::Call::Builder c) {
      auto p = c.initPrimaryCtxRelease();
      p.setHandle(h);
      p.setDevice(shim->server_ordinal(dev));
    });
  }
  return CUDA_SUCCESS;
  API_END
}

CUresult primary_set_flags(CUdevice dev, unsigned flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  shim->primary_set_flags(dev, flags);
  return CUDA_SUCCESS;
  API_END
}

CUresult primary_reset(CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  shim->primary_reset(dev);
  uint64_t h = rgpu::shim::route::wire_context(shim->primary_handle(dev));
  return shim->route_device(dev)
      .client->call_sync(0, [&](wire::Call::Builder c) {
        auto p = c.initPrimaryCtxReset();
        p.setHandle(h);
        p.setDevice(shim->server_ordinal(dev));
      })
      .result;
  API_END
}

CUresult ctx_push(CUcontext ctx) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  uint64_t h = handle_of(ctx);
  if (h == 0 || !shim->context_info(h, nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  rgpu::shim::context_stack().push_back(h);
  return CUDA_SUCCESS;
  API_END
}

CUresult ctx_pop(CUcontext* pctx) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  auto& stack = rgpu::shim::context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(stack.back());
  stack.pop_back();
  return CUDA_SUCCESS;
  API_END
}

}  // namespace

// ---- initialisation and versions -------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  API_BEGIN
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return rgpu::shim::initialize();
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;  // the API this library implements
  return CUDA_SUCCESS;
}

// ---- devices: answered locally ---------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = shim->device_count();
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const auto* d = shim->device(dev);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  size_t n = std::min(d->name.size(), static_cast<size_t>(len - 1));
  std::memcpy(name, d->name.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  const auto* d = shim->device(dev);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  *uuid = d->uuid;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

RGPU_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  const auto* d = shim->device(dev);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = d->total_mem;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const auto* d = shim->device(dev);
  if (!d) return CUDA_ERROR_INVALID_DEVICE;
  size_t a = static_cast<size_t>(attrib);
  if (a >= d->attributes.size() || a >= d->attribute_missing.size() || d->attribute_missing[a]) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *value = d->attributes[a];
  return CUDA_SUCCESS;
  API_END
}

// ---- contexts ----------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  unsigned flags = 0;
  uint64_t h = shim->primary_handle(dev);
  if (shim->primary_retain(dev, &flags) == 1) {
    shim->route_device(dev).client->call_async(0, [&](wire::Call::Builder c) {
      auto p = c.initPrimaryCtxRetain();
      p.setHandle(rgpu::shim::route::wire_context(h));
      p.setDevice(shim->server_ordinal(dev));
      p.setFlags(flags);
    });
  }
  *pctx = reinterpret_cast<CUcontext>(h);
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }
RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(dev); }
RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return primary_set_flags(dev, flags);
}
RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return primary_set_flags(dev, flags);
}
RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primary_reset(dev); }
RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset(dev); }

RGPU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  shim->primary_state(dev, flags, active);
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                                            CUdevice dev) {
  if (params && (params->numExecAffinityParams > 0 || params->cigParams)) return CUDA_ERROR_NOT_SUPPORTED;
  return ctx_create(pctx, flags, dev);
}
RGPU_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return ctx_create(pctx, flags, dev);
}
RGPU_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) { return ctx_destroy(ctx); }
RGPU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return ctx_destroy(ctx); }
RGPU_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) { return ctx_push(ctx); }
RGPU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { return ctx_push(ctx); }
RGPU_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) { return ctx_pop(pctx); }
RGPU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) { return ctx_pop(pctx); }

RGPU_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  uint64_t h = handle_of(ctx);
  auto& stack = rgpu::shim::context_stack();
  if (h == 0) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!shim->context_info(h, nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty()) {
    stack.push_back(h);
  } else {
    stack.back() = h;
  }
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(current_context());
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  ContextInfo info;
  uint64_t h = current_context();
  if (h == 0 || !shim->context_info(h, &info)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = info.device;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxSynchronize() {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  CUresult r = shim->client().call_sync(ctx, [](wire::Call::Builder c) { c.setCtxSynchronize(); }).result;
  CUresult copies = shim->client().wait_copy_outs(Client::kAnyStream);
  return r != CUDA_SUCCESS ? r : copies;
  API_END
}

// ---- memory ------------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!dptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  Client& client = shim->client();
  SyncResult r = client.call_sync(ctx, [&](wire::Call::Builder c) { c.setMemAlloc(size); });
  if (r.result != CUDA_SUCCESS || r.values.size() != 1) return r.result;
  const uint64_t p = r.values[0];
  // With several servers the allocation is recorded for routing, unless its
  // addresses overlap another server's: then it is given back and refused.
  if (CUresult t = shim->track_allocation(rgpu::protocol::server_of(ctx), p, size, ctx); t != CUDA_SUCCESS) {
    (void)client.call_sync(ctx, [&](wire::Call::Builder c) { c.setMemFree(p); });
    return t;
  }
  *dptr = p;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (dptr == 0) return CUDA_SUCCESS;
  const rgpu::shim::Route route = shim->route_pointer(dptr, ctx);
  const CUresult r = route.client->call_sync(route.ctx, [&](wire::Call::Builder c) { c.setMemFree(dptr); }).result;
  if (r == CUDA_SUCCESS) shim->untrack_allocation(dptr);
  return r;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return memcpy_htod(dst, src, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return memcpy_htod(dst, src, n, s, true);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return memcpy_dtoh(dst, src, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return memcpy_dtoh(dst, src, n, s, true);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return memcpy_dtod(dst, src, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return memcpy_dtod(dst, src, n, s, true);
}

RGPU_EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  return memset_any(d, v, 1, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  return memset_any(d, v, 2, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  return memset_any(d, v, 4, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return memset_any(d, v, 1, n, s, true);
}
RGPU_EXPORT CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  return memset_any(d, v, 2, n, s, true);
}
RGPU_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return memset_any(d, v, 4, n, s, true);
}

// ---- streams -------------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) { return stream_synchronize(s); }
RGPU_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  return stream_wait_event(s, e, flags);
}

// ---- events --------------------------------------------------------------------
// Generated (api/driver.api) but for the wait, which also waits for the
// async copies to the host on their way.

RGPU_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  uint64_t h = handle_of(event);
  if (!shim->has_handle(h, HandleKind::kEvent)) return CUDA_ERROR_INVALID_HANDLE;
  const rgpu::shim::Route route = shim->route_handle(h, ctx);
  CUresult r =
      route.client->call_sync(route.ctx, [&](wire::Call::Builder c) { c.initEventSynchronize().setHandle(h); }).result;
  CUresult copies = route.client->wait_copy_outs(Client::kAnyStream);
  return r != CUDA_SUCCESS ? r : copies;
  API_END
}

// ---- page-locked host memory ---------------------------------------------------
// Registered once with the transport (see host_memory.h), so that copies from
// and to it go zero-copy. Mapped (device-visible) host memory cannot exist
// across the network: DEVICEMAP is accepted and recorded, nothing more.

RGPU_EXPORT CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  (void)ctx;
  return shim->host_memory().allocate(bytesize, flags, pp);
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

RGPU_EXPORT CUresult CUDAAPI cuMemFreeHost(void* p) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  return shim->host_memory().free(p);
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  (void)ctx;
  return shim->host_memory().add(p, bytesize, flags);
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemHostUnregister(void* p) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  return shim->host_memory().remove(p);
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  return shim->host_memory().find(p, flags, nullptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  API_END
}
