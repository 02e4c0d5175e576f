// Stream-ordered allocation (cudaMallocAsync, cudaFreeAsync) and the one
// default memory pool per device that the runtime reports for it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace rgpu::runtime {

// A device's default pool: its address is the cudaMemPool_t handed out. It
// keeps the attributes a program may set and the counters it may read.
struct MemPool {
  int device = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  uint64_t release_threshold = 0;
  uint64_t used = 0, used_high = 0;          // bytes the program holds
  uint64_t reserved = 0, reserved_high = 0;  // the same plus frees not yet done
};

// Allocates at once (memory usable at once is usable in stream order too) and
// frees in stream order: a free records an event on its stream, and the
// memory goes back to the device once the event has completed, found by the
// next stream-ordered call, a trim, or an allocation that ran out of memory.
// Thread-safe; lives as long as the runtime's state. Callers have made the
// runtime's context current.
class MemPools {
 public:
  // The default pool of `device` (created on first use).
  MemPool* default_pool(int device);
  // The pool behind a handle, or null when it is not one of ours.
  MemPool* pool(cudaMemPool_t handle);

  cudaError_t allocate(int device, size_t size, CUstream s, void** out);
  cudaError_t free_async(void* ptr, CUstream s);
  // Forgets an allocation cudaFree releases directly; true when it was one.
  bool forget(CUdeviceptr ptr);
  // Returns to the device the memory of every free whose stream has reached
  // it; with `wait`, waits for all of them first.
  cudaError_t reap(bool wait);

  cudaError_t get_attribute(MemPool* p, cudaMemPoolAttr attr, void* value);
  cudaError_t set_attribute(MemPool* p, cudaMemPoolAttr attr, const void* value);

 private:
  struct Pending {
    CUdeviceptr ptr;
    size_t size;
    CUevent done;
    MemPool* pool;
  };
  struct Live {
    size_t size;
    MemPool* pool;
  };
  std::mutex mu_;
  std::vector<std::unique_ptr<MemPool>> pools_;  // by device
  std::map<CUdeviceptr, Live> live_;
  std::vector<Pending> pending_;  // in the order the frees were queued
};

}  // namespace rgpu::runtime
