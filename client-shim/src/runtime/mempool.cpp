// Runtime API: stream-ordered allocation and memory pools.
#include "mempool.h"

#include <algorithm>
#include <cstring>

#include "runtime.h"

using namespace rgpu::runtime;

namespace rgpu::runtime {

MemPool* MemPools::default_pool(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device < 0) return nullptr;
  while (pools_.size() <= static_cast<size_t>(device)) {
    pools_.push_back(std::make_unique<MemPool>());
    pools_.back()->device = static_cast<int>(pools_.size()) - 1;
  }
  return pools_[device].get();
}

MemPool* MemPools::pool(cudaMemPool_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : pools_) {
    if (reinterpret_cast<cudaMemPool_t>(p.get()) == handle) return p.get();
  }
  return nullptr;
}

cudaError_t MemPools::allocate(int device, size_t size, CUstream s, void** out) {
  MemPool* p = default_pool(device);
  if (!p) return cudaErrorInvalidDevice;
  reap(false);
  CUdeviceptr ptr = 0;
  CUresult r = cuMemAlloc(&ptr, size);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    // Frees queued on streams may give back enough: wait for them, as the
    // driver's pool would before failing.
    if (cudaError_t e = reap(true); e != cudaSuccess) return e;
    r = cuMemAlloc(&ptr, size);
  }
  if (r != CUDA_SUCCESS) return to_cuda_error(r);
  (void)s;  // ready at once, so ready in the stream's order
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_[ptr] = Live{size, p};
    p->used += size;
    p->reserved += size;
    p->used_high = std::max(p->used_high, p->used);
    p->reserved_high = std::max(p->reserved_high, p->reserved);
  }
  state().add_device_range(ptr, size, device);
  *out = reinterpret_cast<void*>(ptr);
  return cudaSuccess;
}

cudaError_t MemPools::free_async(void* ptr, CUstream s) {
  auto dptr = reinterpret_cast<CUdeviceptr>(ptr);
  CUevent done = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.find(dptr) == live_.end()) return cudaErrorInvalidValue;
  }
  if (CUresult r = cuEventCreate(&done, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) return to_cuda_error(r);
  if (CUresult r = cuEventRecord(done, s); r != CUDA_SUCCESS) {
    cuEventDestroy(done);
    return to_cuda_error(r);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(dptr);
    if (it == live_.end()) {  // freed by another thread meanwhile
      cuEventDestroy(done);
      return cudaErrorInvalidValue;
    }
    pending_.push_back(Pending{dptr, it->second.size, done, it->second.pool});
    it->second.pool->used -= it->second.size;
    live_.erase(it);
  }
  state().remove_device_range(dptr);
  return reap(false);
}

bool MemPools::forget(CUdeviceptr ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  it->second.pool->used -= it->second.size;
  it->second.pool->reserved -= it->second.size;
  live_.erase(it);
  return true;
}

cudaError_t MemPools::reap(bool wait) {
  std::vector<Pending> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (wait) {
      ready.swap(pending_);
    } else {
      // A free is done once its event is; each query is one round trip, and
      // frees complete mostly in order, so stop at the first one not done.
      size_t n = 0;
      while (n < pending_.size() && cuEventQuery(pending_[n].done) == CUDA_SUCCESS) ++n;
      ready.assign(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }
  cudaError_t first = cudaSuccess;
  for (const Pending& p : ready) {
    CUresult r = wait ? cuEventSynchronize(p.done) : CUDA_SUCCESS;
    cuEventDestroy(p.done);
    if (r == CUDA_SUCCESS) r = cuMemFree(p.ptr);
    if (r != CUDA_SUCCESS && first == cudaSuccess) first = to_cuda_error(r);
    std::lock_guard<std::mutex> lock(mu_);
    p.pool->reserved -= p.size;
  }
  return first;
}

cudaError_t MemPools::get_attribute(MemPool* p, cudaMemPoolAttr attr, void* value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto put_int = [value](int v) { std::memcpy(value, &v, sizeof v); };
  auto put_u64 = [value](uint64_t v) { std::memcpy(value, &v, sizeof v); };
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: put_int(p->reuse_follow_event_dependencies); break;
    case cudaMemPoolReuseAllowOpportunistic: put_int(p->reuse_allow_opportunistic); break;
    case cudaMemPoolReuseAllowInternalDependencies: put_int(p->reuse_allow_internal_dependencies); break;
    case cudaMemPoolAttrReleaseThreshold: put_u64(p->release_threshold); break;
    case cudaMemPoolAttrReservedMemCurrent: put_u64(p->reserved); break;
    case cudaMemPoolAttrReservedMemHigh: put_u64(p->reserved_high); break;
    case cudaMemPoolAttrUsedMemCurrent: put_u64(p->used); break;
    case cudaMemPoolAttrUsedMemHigh: put_u64(p->used_high); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

cudaError_t MemPools::set_attribute(MemPool* p, cudaMemPoolAttr attr, const void* value) {
  std::lock_guard<std::mutex> lock(mu_);
  int i = 0;
  uint64_t u = 0;
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      std::memcpy(&i, value, sizeof i);
      (attr == cudaMemPoolReuseFollowEventDependencies  ? p->reuse_follow_event_dependencies
       : attr == cudaMemPoolReuseAllowOpportunistic     ? p->reuse_allow_opportunistic
                                                        : p->reuse_allow_internal_dependencies) = i != 0;
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      std::memcpy(&p->release_threshold, value, sizeof p->release_threshold);
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      // Only a reset (to the current value) is allowed, as in CUDA.
      std::memcpy(&u, value, sizeof u);
      if (u != 0) return cudaErrorInvalidValue;
      if (attr == cudaMemPoolAttrReservedMemHigh) p->reserved_high = p->reserved;
      else p->used_high = p->used;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;  // the current values are read-only
  }
}

}  // namespace rgpu::runtime

namespace {

cudaError_t malloc_async(void** ptr, size_t size, cudaStream_t s, bool per_thread) {
  RT_BEGIN
  if (!ptr) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  return record(state().pools().allocate(current_device(), size, driver_stream(s, per_thread), ptr));
  RT_END
}

cudaError_t free_async(void* ptr, cudaStream_t s, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (!ptr) return cudaSuccess;
  return record(state().pools().free_async(ptr, driver_stream(s, per_thread)));
  RT_END
}

MemPool* pool_of(cudaMemPool_t handle) { return handle ? state().pools().pool(handle) : nullptr; }

}  // namespace

RGPU_RT_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t s) {
  return malloc_async(ptr, size, s, false);
}
RGPU_RT_EXPORT cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t size, cudaStream_t s) {
  return malloc_async(ptr, size, s, true);
}
RGPU_RT_EXPORT cudaError_t cudaFreeAsync(void* ptr, cudaStream_t s) { return free_async(ptr, s, false); }
RGPU_RT_EXPORT cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t s) { return free_async(ptr, s, true); }

RGPU_RT_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  RT_BEGIN
  if (!pool) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  *pool = reinterpret_cast<cudaMemPool_t>(state().pools().default_pool(device));
  return cudaSuccess;
  RT_END
}

// The current pool is always the default one (cudaDeviceSetMemPool is not provided).
RGPU_RT_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  return cudaDeviceGetDefaultMemPool(pool, device);
}

RGPU_RT_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t handle, enum cudaMemPoolAttr attr, void* value) {
  RT_BEGIN
  MemPool* p = pool_of(handle);
  if (!p || !value) return record(cudaErrorInvalidValue);
  return record(state().pools().get_attribute(p, attr, value));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t handle, enum cudaMemPoolAttr attr, void* value) {
  RT_BEGIN
  MemPool* p = pool_of(handle);
  if (!p || !value) return record(cudaErrorInvalidValue);
  return record(state().pools().set_attribute(p, attr, value));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t handle, const struct cudaMemAccessDesc* descs,
                                                size_t count) {
  RT_BEGIN
  MemPool* p = pool_of(handle);
  if (!p || (count > 0 && !descs)) return record(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {
    const cudaMemAccessDesc& d = descs[i];
    if (d.location.type != cudaMemLocationTypeDevice) return record(cudaErrorInvalidValue);
    if (cudaError_t e = check_device(d.location.id); e != cudaSuccess) return record(e);
    if (d.location.id == p->device) {
      // The owner always reads and writes its pool.
      if (d.flags != cudaMemAccessFlagsProtReadWrite) return record(cudaErrorInvalidValue);
      continue;
    }
    if (d.flags == cudaMemAccessFlagsProtNone) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, d.location.id, p->device) != cudaSuccess || !can) {
      return record(cudaErrorInvalidDevice);
    }
  }
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t handle, size_t min_bytes) {
  RT_BEGIN
  if (!pool_of(handle)) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  // Nothing is kept beyond what the program holds and the frees still queued:
  // those whose stream is done go back now.
  (void)min_bytes;
  return record(state().pools().reap(false));
  RT_END
}
