// Helpers shared by the API entry points: the library's one lazily created
// Driver, the calling thread's context stack, handle resolution, and the
// wrapper that keeps C++ exceptions from crossing the C ABI.
#pragma once

#include <memory>
#include <new>
#include <vector>

#include "cuda_api.h"
#include "driver.h"

namespace rgpu::cpudev {

// The driver once cuInit has succeeded, else null.
Driver* initialized_driver();
// Creates the driver from the environment (first successful call only).
CUresult initialize(unsigned flags);

// The calling thread's context stack (handles; the top is current).
std::vector<uint64_t>& context_stack();

// Checks that cuInit succeeded; sets *d.
CUresult enter(Driver** d);
// Also resolves the calling thread's current context (INVALID_CONTEXT when
// none or destroyed) and returns its sticky error, if any.
CUresult enter(Driver** d, std::shared_ptr<Context>* ctx);

// Resolves a stream handle: NULL and CU_STREAM_LEGACY name the current
// context's legacy stream, CU_STREAM_PER_THREAD the calling thread's default
// stream, anything else a stream created by cuStreamCreate*. Sets the stream
// and its context. `current` may be null only for explicit handles.
CUresult resolve_stream(Driver* d, const std::shared_ptr<Context>& current, CUstream h,
                        std::shared_ptr<Context>* ctx, std::shared_ptr<Stream>* stream);

// Runs `f`, mapping escaping exceptions to CUresult.
template <class F>
CUresult guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

inline uint64_t to_u64(CUcontext c) { return reinterpret_cast<uint64_t>(c); }
inline uint64_t to_u64(CUstream s) { return reinterpret_cast<uint64_t>(s); }
inline uint64_t to_u64(CUevent e) { return reinterpret_cast<uint64_t>(e); }
template <class H>
H to_handle(uint64_t v) {
  return reinterpret_cast<H>(v);
}

}  // namespace rgpu::cpudev

#define RGPU_CU_TRY(expr)                 \
  do {                                    \
    CUresult rgpu_cu_try_ = (expr);       \
    if (rgpu_cu_try_ != CUDA_SUCCESS) return rgpu_cu_try_; \
  } while (0)
