// Entry points: streams and events.
#include <chrono>

#include "api_common.h"

using namespace rgpu::cpudev;

namespace {

// Resolves `h` for calls that may name an explicit stream without a current
// context (synchronize, query, wait).
CUresult lookup_stream(CUstream h, Driver** d, std::shared_ptr<Context>* ctx, std::shared_ptr<Stream>* s) {
  RGPU_CU_TRY(enter(d));
  std::shared_ptr<Context> current;
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    RGPU_CU_TRY(enter(d, &current));
  }
  return resolve_stream(*d, current, h, ctx, s);
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!phStream) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    // Priorities range from 0 (least) to -5 (greatest); others are clamped.
    priority = priority > 0 ? 0 : (priority < -5 ? -5 : priority);
    auto s = d->create_stream(ctx, flags, priority);
    if (!s) return CUDA_ERROR_INVALID_CONTEXT;
    *phStream = to_handle<CUstream>(s->handle());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int flags) {
  return cuStreamCreateWithPriority(phStream, flags, 0);
}

CUresult CUDAAPI cuStreamDestroy(CUstream h) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
    return d->destroy_stream(to_u64(h));
  });
}

CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
    RGPU_CU_TRY(ctx->check_wait(s));
    if (s->kind() == Stream::Kind::kLegacy) {
      // Waiting on the legacy stream waits for the blocking streams too.
      uint64_t seq = ctx->enqueue(s, {}, nullptr);
      if (seq) s->wait(seq);
    } else {
      s->wait(s->last_enqueued());
    }
    CUresult st = ctx->sticky();
    return st != CUDA_SUCCESS ? st : s->take_error();
  });
}

CUresult CUDAAPI cuStreamQuery(CUstream h) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
    RGPU_CU_TRY(ctx->check_wait(s));
    if (!s->idle()) return CUDA_ERROR_NOT_READY;
    CUresult st = ctx->sticky();
    return st != CUDA_SUCCESS ? st : s->take_error();
  });
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent hEvent, unsigned int flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
    if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
    auto e = d->event(to_u64(hEvent));
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    std::vector<GraphNode*> tail;
    if (auto c = e->captured(&tail)) return capture_join(c, s, tail);
    // A capturing stream does not wait for work outside its capture: a graph
    // has no edge to it (see docs/cpu-device.md).
    if (s->capture()) return CUDA_SUCCESS;
    Dependency dep = e->dependency();
    if (dep.stream.expired()) return CUDA_SUCCESS;  // never recorded, or already complete
    return ctx->enqueue(s, {dep}, nullptr) ? CUDA_SUCCESS : capture_refusal();
  });
}

CUresult CUDAAPI cuStreamGetFlags(CUstream h, unsigned int* flags) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  std::shared_ptr<Stream> s;
  RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetPriority(CUstream h, int* priority) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  std::shared_ptr<Stream> s;
  RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  *priority = s->priority();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    auto e = d->create_event(ctx, flags);
    if (!e) return CUDA_ERROR_INVALID_CONTEXT;
    *phEvent = to_handle<CUevent>(e->handle());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream h) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto e = d->event(to_u64(hEvent));
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
    if (ctx->handle() != e->context()) return CUDA_ERROR_INVALID_HANDLE;
    if (auto c = s->capture()) return capture_record_event(c, s, e);
    bool ok = e->record(s, [&](uint64_t generation) {
      return ctx->enqueue(s, {}, [e, generation] {
        e->complete(generation, Clock::now());
        return CUDA_SUCCESS;
      });
    });
    return ok ? CUDA_SUCCESS : capture_refusal();
  });
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream h, unsigned int flags) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  return guarded([&] {
    if (flags & CU_EVENT_RECORD_EXTERNAL) {
      // Outside a capture it is a plain record; inside one it would be an
      // event record node, which captured graphs here do not have: refused,
      // never captured as the internal dependency it is not.
      Driver* d;
      std::shared_ptr<Context> ctx;
      std::shared_ptr<Stream> s;
      RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
      if (s->capture()) return CUDA_ERROR_NOT_SUPPORTED;
    }
    return cuEventRecord(hEvent, h);
  });
}

CUresult CUDAAPI cuStreamAddCallback(CUstream h, CUstreamCallback callback, void* userData, unsigned int flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
    if (!callback || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    // The callback learns the stream's status: the sticky error, if any.
    std::shared_ptr<ContextState> state = ctx->state();
    uint64_t seq = ctx->enqueue(s, {}, [callback, userData, h, state] {
      callback(h, static_cast<CUresult>(state->sticky.load()), userData);
      return CUDA_SUCCESS;
    }, OpKind::kHost, CU_GRAPH_NODE_TYPE_HOST);
    return seq ? CUDA_SUCCESS : capture_refusal();
  });
}

CUresult CUDAAPI cuStreamGetCtx(CUstream h, CUcontext* pctx) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  std::shared_ptr<Stream> s;
  RGPU_CU_TRY(lookup_stream(h, &d, &ctx, &s));
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = to_handle<CUcontext>(ctx->handle());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto e = d->event(to_u64(hEvent));
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    return e->done() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto e = d->event(to_u64(hEvent));
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    e->wait();
    auto ctx = d->context(e->context());
    return ctx ? ctx->sticky() : CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    auto start = d->event(to_u64(hStart));
    auto end = d->event(to_u64(hEnd));
    if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
    if (!start->timing() || !end->timing()) return CUDA_ERROR_INVALID_HANDLE;
    if (!start->recorded() || !end->recorded()) return CUDA_ERROR_INVALID_HANDLE;
    Clock::time_point t0, t1;
    if (!start->time(&t0) || !end->time(&t1)) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = std::chrono::duration<float, std::milli>(t1 - t0).count();
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    return d->destroy_event(to_u64(hEvent));
  });
}

}  // extern "C"
