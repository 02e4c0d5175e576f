// The library's lazily created driver and the per-thread context stack.
#include "api_common.h"
#include "errors.h"

#include <cstdlib>
#include <mutex>

#include "rgpu/common/log.h"
#include "worker_priority.h"

namespace rgpu::cpudev {

namespace {

// Process state that the driver API's ABI implies: created by the first
// successful cuInit, destroyed when the library is unloaded.
struct Library {
  std::mutex mu;
  std::unique_ptr<Driver> driver;
  std::atomic<Driver*> ready{nullptr};
};

Library& library() {
  static Library lib;
  return lib;
}

const char* read_env(const char* name) { return std::getenv(name); }

}  // namespace

Driver* initialized_driver() { return library().ready.load(std::memory_order_acquire); }

CUresult initialize(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Library& lib = library();
  std::lock_guard lock(lib.mu);
  if (lib.driver) return CUDA_SUCCESS;
  auto config = config_from_env(&read_env);
  if (!config) {
    RGPU_ERROR("cpudev init failed reason=\"%s\"", config.status().message().c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  set_worker_nice(config->worker_nice);  // before the driver starts its threads
  auto driver = Driver::create(*config);
  if (!driver) {
    RGPU_ERROR("cpudev init failed reason=\"%s\"", driver.status().message().c_str());
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  lib.driver = std::move(driver.value());
  lib.ready.store(lib.driver.get(), std::memory_order_release);
  return CUDA_SUCCESS;
}

std::vector<uint64_t>& context_stack() {
  thread_local std::vector<uint64_t> stack;
  return stack;
}

CUresult enter(Driver** d) {
  // As in CUDA, host functions must not call the API.
  if (on_stream_worker()) return CUDA_ERROR_NOT_PERMITTED;
  clear_reason();  // a reason belongs to the call that noted it
  *d = initialized_driver();
  return *d ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult enter(Driver** d, std::shared_ptr<Context>* ctx) {
  RGPU_CU_TRY(enter(d));
  auto& stack = context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = (*d)->context(stack.back());
  if (!*ctx) return CUDA_ERROR_INVALID_CONTEXT;
  return (*ctx)->sticky();
}

CUresult resolve_stream(Driver* d, const std::shared_ptr<Context>& current, CUstream h,
                        std::shared_ptr<Context>* ctx, std::shared_ptr<Stream>* stream) {
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = current;
    *stream = h == CU_STREAM_PER_THREAD ? current->per_thread() : current->legacy();
    return *stream ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  *stream = d->stream(to_u64(h));
  if (!*stream) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = d->context((*stream)->context());
  if (!*ctx) return CUDA_ERROR_INVALID_HANDLE;
  return (*ctx)->sticky();
}

}  // namespace rgpu::cpudev
