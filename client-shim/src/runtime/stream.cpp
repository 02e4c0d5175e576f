// Runtime API: streams (with the legacy and per-thread default streams),
// events and host callbacks, which run on the client in stream order.
#include <algorithm>
#include <memory>

#include "runtime.h"

using namespace rgpu::runtime;

namespace {

CUevent ev(cudaEvent_t e) { return reinterpret_cast<CUevent>(e); }

// A cudaStreamAddCallback callback carried through cuLaunchHostFunc.
struct Callback {
  cudaStreamCallback_t fn;
  cudaStream_t stream;
  void* data;
};

void run_callback(void* arg) {
  std::unique_ptr<Callback> cb(static_cast<Callback*>(arg));
  // Work queued before the callback has completed when it runs; an error of
  // that work is reported by the next synchronizing call, as rgpu reports
  // every asynchronous error.
  cb->fn(cb->stream, cudaSuccess, cb->data);
}

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  RT_BEGIN
  if (!out) return record(cudaErrorInvalidValue);
  if (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUstream s = nullptr;
  if (CUresult r = cuStreamCreateWithPriority(&s, flags, priority); r != CUDA_SUCCESS) return record(r);
  *out = reinterpret_cast<cudaStream_t>(s);
  // Kept for cudaStreamGetPriority, clamped to the range the runtime reports
  // (cudaDeviceGetStreamPriorityRange), as the driver clamps it.
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  state().set_stream_priority(*out, std::clamp(priority, greatest, least));
  return cudaSuccess;
  RT_END
}

cudaError_t stream_sync(cudaStream_t s, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuStreamSynchronize(driver_stream(s, per_thread)));
  RT_END
}

cudaError_t stream_query(cudaStream_t s, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuStreamQuery(driver_stream(s, per_thread)));
  RT_END
}

cudaError_t stream_wait(cudaStream_t s, cudaEvent_t e, unsigned flags, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (flags & ~static_cast<unsigned>(cudaEventWaitExternal)) return record(cudaErrorInvalidValue);
  return record(cuStreamWaitEvent(driver_stream(s, per_thread), ev(e), 0));
  RT_END
}

cudaError_t add_callback(cudaStream_t s, cudaStreamCallback_t fn, void* data, unsigned flags, bool per_thread) {
  RT_BEGIN
  if (!fn || flags != 0) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  auto cb = std::make_unique<Callback>(Callback{fn, s, data});
  CUresult r = cuLaunchHostFunc(driver_stream(s, per_thread), run_callback, cb.get());
  if (r == CUDA_SUCCESS) cb.release();  // owned by run_callback from here
  return record(r);
  RT_END
}

cudaError_t host_func(cudaStream_t s, cudaHostFn_t fn, void* data, bool per_thread) {
  RT_BEGIN
  if (!fn) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  return record(cuLaunchHostFunc(driver_stream(s, per_thread), fn, data));
  RT_END
}

cudaError_t event_record(cudaEvent_t e, cudaStream_t s, unsigned flags, bool per_thread) {
  RT_BEGIN
  if (flags & ~static_cast<unsigned>(cudaEventRecordExternal)) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  return record(cuEventRecordWithFlags(ev(e), driver_stream(s, per_thread), flags));
  RT_END
}

}  // namespace

// ---- streams ---------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* s) { return create_stream(s, 0, 0); }
RGPU_RT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return create_stream(s, flags, 0);
}
RGPU_RT_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return create_stream(s, flags, priority);
}

RGPU_RT_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return record(cudaErrorInvalidResourceHandle);
  state().forget_stream(s);
  return record(cuStreamDestroy(reinterpret_cast<CUstream>(s)));
  RT_END
}

namespace {

cudaError_t stream_priority(cudaStream_t s, int* priority) {
  RT_BEGIN
  if (!priority) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  if (state().stream_priority(s, priority)) return cudaSuccess;
  // The default streams, and streams made through the driver API, which the
  // runtime did not see created: their priority is the default.
  *priority = 0;
  return cudaSuccess;
  RT_END
}

}  // namespace

RGPU_RT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t s, int* priority) { return stream_priority(s, priority); }
RGPU_RT_EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* priority) {
  return stream_priority(s, priority);
}

RGPU_RT_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) { return stream_sync(s, false); }
RGPU_RT_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return stream_sync(s, true); }
RGPU_RT_EXPORT cudaError_t cudaStreamQuery(cudaStream_t s) { return stream_query(s, false); }
RGPU_RT_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return stream_query(s, true); }
RGPU_RT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return stream_wait(s, e, flags, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return stream_wait(s, e, flags, true);
}
RGPU_RT_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t fn, void* data,
                                                 unsigned int flags) {
  return add_callback(s, fn, data, flags, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t fn, void* data,
                                                      unsigned int flags) {
  return add_callback(s, fn, data, flags, true);
}
RGPU_RT_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return host_func(s, fn, data, false);
}
RGPU_RT_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return host_func(s, fn, data, true);
}

// ---- events ----------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  RT_BEGIN
  if (!e) return record(cudaErrorInvalidValue);
  // cudaEvent* flags have the values of CU_EVENT_*.
  constexpr unsigned kKnown = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (flags & ~kKnown) return record(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUevent out = nullptr;
  if (CUresult r = cuEventCreate(&out, flags); r != CUDA_SUCCESS) return record(r);
  *e = reinterpret_cast<cudaEvent_t>(out);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }

RGPU_RT_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuEventDestroy(ev(e)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, 0, false); }
RGPU_RT_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  return event_record(e, s, 0, true);
}
RGPU_RT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  return event_record(e, s, flags, false);
}
RGPU_RT_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  return event_record(e, s, flags, true);
}

RGPU_RT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuEventQuery(ev(e)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuEventSynchronize(ev(e)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  RT_BEGIN
  if (!ms) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  return record(cuEventElapsedTime(ms, ev(start), ev(end)));
  RT_END
}
