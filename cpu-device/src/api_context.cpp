// Entry points: contexts and the calling thread's context stack.
#include <algorithm>

#include "api_common.h"
#include "rgpu/cpudev/extensions.h"

using namespace rgpu::cpudev;

extern "C" {

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) return CUDA_ERROR_INVALID_VALUE;
    if (!d->device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (params && (params->numExecAffinityParams > 0 || params->cigParams)) return CUDA_ERROR_NOT_SUPPORTED;
    auto ctx = d->create_context(dev, flags);
    context_stack().push_back(ctx->handle());
    *pctx = to_handle<CUcontext>(ctx->handle());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    RGPU_CU_TRY(d->destroy_context(to_u64(ctx)));
    auto& stack = context_stack();
    stack.erase(std::remove(stack.begin(), stack.end(), to_u64(ctx)), stack.end());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!ctx || !d->context(to_u64(ctx))) return CUDA_ERROR_INVALID_CONTEXT;
    context_stack().push_back(to_u64(ctx));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  auto& stack = context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = to_handle<CUcontext>(stack.back());
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto& stack = context_stack();
    if (!ctx) {
      if (!stack.empty()) stack.pop_back();
      return CUDA_SUCCESS;
    }
    if (!d->context(to_u64(ctx))) return CUDA_ERROR_INVALID_CONTEXT;
    if (stack.empty()) {
      stack.push_back(to_u64(ctx));
    } else {
      stack.back() = to_u64(ctx);
    }
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  auto& stack = context_stack();
  *pctx = stack.empty() ? nullptr : to_handle<CUcontext>(stack.back());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  CUresult r = enter(&d, &ctx);
  if (!ctx) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  CUresult r = enter(&d, &ctx);
  if (!ctx) return r;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = ctx->flags();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  CUresult r = enter(&d, &ctx);
  if (!ctx) return r;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext c, unsigned int* version) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = c ? to_u64(c) : (context_stack().empty() ? 0 : context_stack().back());
  if (!h || !d->context(h)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // what CUDA reports for contexts made by current drivers
  return CUDA_SUCCESS;
}

// Peer access is always possible (all devices share host memory); the calls
// only keep CUDA's bookkeeping errors.
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  RGPU_CU_TRY(enter(&d, &ctx));
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto other = d->context(to_u64(peer));
  if (!other) return CUDA_ERROR_INVALID_CONTEXT;
  if (other->device() == ctx->device()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  RGPU_CU_TRY(enter(&d, &ctx));
  return d->context(to_u64(peer)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    CUresult r = enter(&d, &ctx);
    if (!ctx) return r;
    RGPU_CU_TRY(capture_check_unsafe(d->graphs()));
    return ctx->synchronize();
  });
}

}  // extern "C"

// rgpu's extensions: contracts in rgpu/cpudev/extensions.h.
namespace {

// Runs fn on the context `ctx` names, or answers CUDA_ERROR_INVALID_CONTEXT.
template <class Fn>
CUresult with_context(CUcontext ctx, Fn&& fn) {
  using namespace rgpu::cpudev;
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto context = d->context(to_u64(ctx));
    if (!context) return CUDA_ERROR_INVALID_CONTEXT;
    return fn(*context);
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxSetPrintfCallback(
    CUcontext ctx, void (*callback)(void* user, const char* text, size_t size), void* user) {
  return with_context(ctx, [&](rgpu::cpudev::Context& context) {
    auto state = context.state();
    std::lock_guard<std::mutex> lock(state->printf_mu);
    state->printf_callback = callback;
    state->printf_user = user;
    return CUDA_SUCCESS;
  });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxSetErrorOutputCallback(
    CUcontext ctx, void (*callback)(void* user, const char* text, size_t size), void* user) {
  return with_context(ctx, [&](rgpu::cpudev::Context& context) {
    auto state = context.state();
    std::lock_guard<std::mutex> lock(state->printf_mu);
    state->error_callback = callback;
    state->error_user = user;
    return CUDA_SUCCESS;
  });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxSetErrorReasonCallback(
    CUcontext ctx, void (*callback)(void* user, CUresult code, const char* text, size_t size), void* user) {
  return with_context(ctx, [&](rgpu::cpudev::Context& context) {
    auto state = context.state();
    std::lock_guard<std::mutex> lock(state->printf_mu);
    state->reason_callback = callback;
    state->reason_user = user;
    return CUDA_SUCCESS;
  });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxSetIsolationGroup(CUcontext ctx,
                                                                                   unsigned long long group) {
  return with_context(ctx, [&](rgpu::cpudev::Context& context) { return context.set_group(group); });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxSetComputeShare(CUcontext ctx, float share) {
  if (!(share > 0 && share <= 1)) return CUDA_ERROR_INVALID_VALUE;  // NaN fails too
  using namespace rgpu::cpudev;
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto context = d->context(to_u64(ctx));
    if (!context) return CUDA_ERROR_INVALID_CONTEXT;
    auto state = context->state();
    state->compute_share.store(share);
    std::lock_guard<std::mutex> lock(state->share_mu);
    if (state->fair) {
      state->fair->set_share(state->fair_id, share);
    } else {
      state->fair = d->device(context->device())->fair;
      state->fair_id = state->fair->add(share);
    }
    return CUDA_SUCCESS;
  });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuCtxAbort(CUcontext ctx) {
  return with_context(ctx, [&](rgpu::cpudev::Context& context) {
    context.set_sticky(CUDA_ERROR_LAUNCH_FAILED);
    context.state()->cancel.store(true);
    return CUDA_SUCCESS;
  });
}
