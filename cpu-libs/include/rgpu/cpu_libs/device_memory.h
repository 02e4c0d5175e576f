// Whether a span of device memory a CPU stand-in library is asked to read or
// write is the calling context's memory, checked before anything is queued.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace rgpu::cpu_libs {

// True when [ptr, ptr + bytes) lies in memory of the current context: one
// allocation, or several that follow one another without a gap. The second
// case is how the driver's virtual memory management lays out a growing
// segment (PyTorch's expandable segments): chunks mapped side by side, each
// its own range for cuMemGetAddressRange, that a tensor may span. bytes 0
// checks ptr alone.
inline bool inside_device_memory(CUdeviceptr ptr, uint64_t bytes) {
  CUdeviceptr at = ptr;
  const CUdeviceptr end = ptr + bytes;
  if (end < ptr) return false;
  do {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange(&base, &size, at) != CUDA_SUCCESS || at < base || at - base >= size) return false;
    at = base + size;  // the first byte past this range
  } while (at < end);
  return true;
}

}  // namespace rgpu::cpu_libs
