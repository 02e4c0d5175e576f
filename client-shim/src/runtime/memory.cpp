// Runtime API: device and page-locked host memory, copies (with
// cudaMemcpyDefault inferred from the allocations made through rgpu), memsets
// and device symbols.
#include <cstdlib>
#include <cstring>

#include "mempool.h"
#include "runtime.h"

using namespace rgpu::runtime;

namespace {

constexpr size_t kPitchAlignment = 512;

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool is_device(const void* p) { return state().find_device_range(dptr(p), nullptr, nullptr); }

// The direction of a copy; cudaMemcpyDefault is inferred: a pointer inside an
// allocation made by cudaMalloc (or a symbol) is device memory, anything else
// host memory.
cudaError_t direction(cudaMemcpyKind kind, const void* dst, const void* src, cudaMemcpyKind* out) {
  switch (kind) {
    case cudaMemcpyHostToHost:
    case cudaMemcpyHostToDevice:
    case cudaMemcpyDeviceToHost:
    case cudaMemcpyDeviceToDevice:
      *out = kind;
      return cudaSuccess;
    case cudaMemcpyDefault: {
      bool d = is_device(dst), s = is_device(src);
      *out = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
               : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
      return cudaSuccess;
    }
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

// One linear copy on driver stream `s`. A synchronous copy on the legacy
// stream uses the driver's synchronous call; on another stream (per-thread
// default) it is queued there and waited for.
cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUstream s, bool async) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  cudaMemcpyKind k;
  if (cudaError_t e = direction(kind, dst, src, &k); e != cudaSuccess) return e;
  CUresult r = CUDA_SUCCESS;
  bool legacy_sync = !async && s == nullptr;
  switch (k) {
    case cudaMemcpyHostToHost:
      if (async || s != nullptr) r = cuStreamSynchronize(s);
      if (r == CUDA_SUCCESS) std::memmove(dst, src, n);
      return to_cuda_error(r);
    case cudaMemcpyHostToDevice:
      r = legacy_sync ? cuMemcpyHtoD(dptr(dst), src, n) : cuMemcpyHtoDAsync(dptr(dst), src, n, s);
      break;
    case cudaMemcpyDeviceToHost:
      r = legacy_sync ? cuMemcpyDtoH(dst, dptr(src), n) : cuMemcpyDtoHAsync(dst, dptr(src), n, s);
      break;
    default:
      r = legacy_sync ? cuMemcpyDtoD(dptr(dst), dptr(src), n) : cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, s);
      break;
  }
  if (r == CUDA_SUCCESS && !async && !legacy_sync) r = cuStreamSynchronize(s);
  return to_cuda_error(r);
}

// A pitched copy, row by row (one copy when both sides are contiguous).
cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind, CUstream s, bool async) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  if (dpitch == width && spitch == width) return copy(dst, src, width * height, kind, s, async);
  cudaMemcpyKind k;
  if (cudaError_t e = direction(kind, dst, src, &k); e != cudaSuccess) return e;
  // Rows go out as async copies on the stream, then one wait for a sync copy.
  for (size_t row = 0; row < height; ++row) {
    cudaError_t e = copy(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch, width,
                         k, s, true);
    if (e != cudaSuccess) return e;
  }
  return async ? cudaSuccess : to_cuda_error(cuStreamSynchronize(s));
}

cudaError_t memset_2d(void* dst, size_t pitch, int value, size_t width, size_t height, CUstream s, bool async) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (!dst || width > pitch) return cudaErrorInvalidValue;
  auto v = static_cast<unsigned char>(value);
  if (pitch == width) {
    CUresult r = !async && s == nullptr ? cuMemsetD8(dptr(dst), v, width * height)
                                        : cuMemsetD8Async(dptr(dst), v, width * height, s);
    if (r == CUDA_SUCCESS && !async && s != nullptr) r = cuStreamSynchronize(s);
    return to_cuda_error(r);
  }
  // The whole region in one call, as the driver has it.
  CUresult r = !async && s == nullptr ? cuMemsetD2D8(dptr(dst), pitch, v, width, height)
                                      : cuMemsetD2D8Async(dptr(dst), pitch, v, width, height, s);
  if (r == CUDA_SUCCESS && !async && s != nullptr) r = cuStreamSynchronize(s);
  return to_cuda_error(r);
}

cudaError_t symbol_range(const void* symbol, size_t count, size_t offset, CUdeviceptr* ptr) {
  if (!symbol) return cudaErrorInvalidSymbol;
  size_t size = 0;
  if (cudaError_t e = state().variable(symbol, current_device(), ptr, &size); e != cudaSuccess) return e;
  if (offset > size || count > size - offset) return cudaErrorInvalidValue;
  *ptr += offset;
  return cudaSuccess;
}

cudaError_t to_symbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind,
                      CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  CUdeviceptr p = 0;
  if (cudaError_t e = symbol_range(symbol, count, offset, &p); e != cudaSuccess) return record(e);
  return record(copy(reinterpret_cast<void*>(p), src, count, kind, s, async));
  RT_END
}

cudaError_t from_symbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                        CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  CUdeviceptr p = 0;
  if (cudaError_t e = symbol_range(symbol, count, offset, &p); e != cudaSuccess) return record(e);
  return record(copy(dst, reinterpret_cast<const void*>(p), count, kind, s, async));
  RT_END
}

cudaError_t memcpy_any(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(copy(dst, src, n, kind, s, async));
  RT_END
}

cudaError_t memcpy_2d_any(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                          cudaMemcpyKind kind, CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(copy_2d(dst, dpitch, src, spitch, width, height, kind, s, async));
  RT_END
}

cudaError_t memset_any(void* dst, int value, size_t n, CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(memset_2d(dst, n, value, n, n == 0 ? 0 : 1, s, async));
  RT_END
}

cudaError_t memset_2d_any(void* dst, size_t pitch, int value, size_t width, size_t height, CUstream s, bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(memset_2d(dst, pitch, value, width, height, s, async));
  RT_END
}

cudaError_t host_alloc(void** ptr, size_t size, unsigned flags) {
  RT_BEGIN
  if (!ptr) return record(cudaErrorInvalidValue);
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if (flags & ~kKnown) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  // The driver registers it with the transport once, so that copies from and
  // to it go zero-copy. cudaHostAlloc* flags have the CU_MEMHOSTALLOC_* values.
  void* p = nullptr;
  if (CUresult r = cuMemHostAlloc(&p, std::max<size_t>(size, 1), flags); r != CUDA_SUCCESS) {
    return record(r);
  }
  state().add_host_range(p, size, flags, false);
  *ptr = p;
  return cudaSuccess;
  RT_END
}

}  // namespace

// ---- allocation -----------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  RT_BEGIN
  if (!ptr) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  if (CUresult r = cuMemAlloc(&p, size); r != CUDA_SUCCESS) return record(r);
  state().add_device_range(p, size, current_device());
  *ptr = reinterpret_cast<void*>(p);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  RT_BEGIN
  if (!ptr || !pitch) return record(cudaErrorInvalidValue);
  *pitch = (std::max<size_t>(width, 1) + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  return cudaMalloc(ptr, *pitch * height);
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaFree(void* ptr) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (!ptr) return cudaSuccess;
  if (!state().remove_device_range(dptr(ptr))) return record(cudaErrorInvalidValue);
  state().pools().forget(dptr(ptr));  // cudaFree may free what cudaMallocAsync allocated
  return record(cuMemFree(dptr(ptr)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(cuMemGetInfo(free_bytes, total));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) { return host_alloc(ptr, size, 0); }
RGPU_RT_EXPORT cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  return host_alloc(ptr, size, flags);
}

RGPU_RT_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  RT_BEGIN
  if (!ptr) return cudaSuccess;
  bool registered = false;
  if (!state().remove_host_range(ptr, &registered)) return record(cudaErrorInvalidValue);
  if (registered) {  // registered memory belongs to the program; put it back
    state().add_host_range(ptr, 0, 0, true);
    return record(cudaErrorInvalidValue);
  }
  return record(cuMemFreeHost(ptr));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  RT_BEGIN
  if (!ptr || size == 0) return record(cudaErrorInvalidValue);
  constexpr unsigned kKnown = cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                              cudaHostRegisterReadOnly;
  if (flags & ~kKnown) return record(cudaErrorInvalidValue);
  if (state().find_host_range(ptr, nullptr, nullptr)) return record(cudaErrorHostMemoryAlreadyRegistered);
  RT_CONTEXT_OR_RETURN();
  // cudaHostRegister* flags have the CU_MEMHOSTREGISTER_* values.
  if (CUresult r = cuMemHostRegister_v2(ptr, size, flags); r != CUDA_SUCCESS) return record(r);
  state().add_host_range(ptr, size, flags, true);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaHostUnregister(void* ptr) {
  RT_BEGIN
  bool registered = false;
  if (!ptr || !state().remove_host_range(ptr, &registered)) return record(cudaErrorHostMemoryNotRegistered);
  if (!registered) {  // cudaHostAlloc memory is freed with cudaFreeHost
    state().add_host_range(ptr, 0, 0, false);
    return record(cudaErrorHostMemoryNotRegistered);
  }
  return record(cuMemHostUnregister(ptr));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags) {
  RT_BEGIN
  if (!device_ptr || flags != 0) return record(cudaErrorInvalidValue);
  if (!state().find_host_range(host_ptr, nullptr, nullptr)) return record(cudaErrorInvalidValue);
  // Page-locked memory lives on the client; the device is on a server and
  // cannot address it, so there is no device pointer to give.
  return refuse("cudaHostGetDevicePointer");
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaHostGetFlags(unsigned int* flags, void* ptr) {
  RT_BEGIN
  if (!flags || !state().find_host_range(ptr, nullptr, flags)) return record(cudaErrorInvalidValue);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  RT_BEGIN
  if (!attr) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  std::memset(attr, 0, sizeof(*attr));
  int device = 0;
  if (state().find_device_range(dptr(ptr), nullptr, &device)) {
    attr->type = cudaMemoryTypeDevice;
    attr->device = device;
    attr->devicePointer = const_cast<void*>(ptr);
  } else if (state().find_host_range(ptr, nullptr, nullptr)) {
    attr->type = cudaMemoryTypeHost;
    attr->device = current_device();
    attr->hostPointer = const_cast<void*>(ptr);  // not mapped into the (remote) device
  } else {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = current_device();
    attr->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
  RT_END
}

// ---- copies ---------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return memcpy_any(dst, src, n, kind, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return memcpy_any(dst, src, n, kind, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                           cudaStream_t s) {
  return memcpy_any(dst, src, n, kind, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                                cudaStream_t s) {
  return memcpy_any(dst, src, n, kind, driver_stream(s, true), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                        size_t height, cudaMemcpyKind kind) {
  return memcpy_2d_any(dst, dpitch, src, spitch, width, height, kind, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                             size_t width, size_t height, cudaMemcpyKind kind) {
  return memcpy_2d_any(dst, dpitch, src, spitch, width, height, kind, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                             size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
  return memcpy_2d_any(dst, dpitch, src, spitch, width, height, kind, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                  size_t width, size_t height, cudaMemcpyKind kind,
                                                  cudaStream_t s) {
  return memcpy_2d_any(dst, dpitch, src, spitch, width, height, kind, driver_stream(s, true), true);
}

// ---- memsets --------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaMemset(void* dst, int value, size_t n) {
  return memset_any(dst, value, n, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemset_ptds(void* dst, int value, size_t n) {
  return memset_any(dst, value, n, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t s) {
  return memset_any(dst, value, n, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* dst, int value, size_t n, cudaStream_t s) {
  return memset_any(dst, value, n, driver_stream(s, true), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  return memset_2d_any(dst, pitch, value, width, height, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemset2D_ptds(void* dst, size_t pitch, int value, size_t width, size_t height) {
  return memset_2d_any(dst, pitch, value, width, height, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height,
                                             cudaStream_t s) {
  return memset_2d_any(dst, pitch, value, width, height, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void* dst, size_t pitch, int value, size_t width,
                                                  size_t height, cudaStream_t s) {
  return memset_2d_any(dst, pitch, value, width, height, driver_stream(s, true), true);
}

// ---- symbols --------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t n, size_t offset,
                                              cudaMemcpyKind kind) {
  return to_symbol(symbol, src, n, offset, kind, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t n, size_t offset,
                                                   cudaMemcpyKind kind) {
  return to_symbol(symbol, src, n, offset, kind, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t n, size_t offset,
                                                   cudaMemcpyKind kind, cudaStream_t s) {
  return to_symbol(symbol, src, n, offset, kind, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t n,
                                                        size_t offset, cudaMemcpyKind kind, cudaStream_t s) {
  return to_symbol(symbol, src, n, offset, kind, driver_stream(s, true), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t n, size_t offset,
                                                cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, n, offset, kind, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t n, size_t offset,
                                                     cudaMemcpyKind kind) {
  return from_symbol(dst, symbol, n, offset, kind, CU_STREAM_PER_THREAD, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t n, size_t offset,
                                                     cudaMemcpyKind kind, cudaStream_t s) {
  return from_symbol(dst, symbol, n, offset, kind, driver_stream(s, false), true);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t n, size_t offset,
                                                          cudaMemcpyKind kind, cudaStream_t s) {
  return from_symbol(dst, symbol, n, offset, kind, driver_stream(s, true), true);
}

RGPU_RT_EXPORT cudaError_t cudaGetSymbolAddress(void** ptr, const void* symbol) {
  RT_BEGIN
  if (!ptr) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUdeviceptr p = 0;
  size_t size = 0;
  if (!symbol) return record(cudaErrorInvalidSymbol);
  if (cudaError_t e = state().variable(symbol, current_device(), &p, &size); e != cudaSuccess) return record(e);
  *ptr = reinterpret_cast<void*>(p);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  RT_BEGIN
  if (!size) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  CUdeviceptr p = 0;
  if (!symbol) return record(cudaErrorInvalidSymbol);
  return record(state().variable(symbol, current_device(), &p, size));
  RT_END
}

namespace rgpu::runtime {

cudaError_t symbol_address(const void* symbol, size_t count, size_t offset, void** ptr) {
  CUdeviceptr p = 0;
  if (cudaError_t e = symbol_range(symbol, count, offset, &p); e != cudaSuccess) return e;
  *ptr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t copy_3d_async(const cudaMemcpy3DParms& p, CUstream s) {
  if (p.srcArray || p.dstArray) return cudaErrorNotSupported;
  const cudaExtent& e = p.extent;
  if (e.width == 0 || e.height == 0 || e.depth == 0) return cudaSuccess;
  const size_t spitch = p.srcPtr.pitch, dpitch = p.dstPtr.pitch;
  if (!p.srcPtr.ptr || !p.dstPtr.ptr || spitch == 0 || dpitch == 0) return cudaErrorInvalidValue;
  if (e.depth > 1 && (p.srcPtr.ysize < e.height || p.dstPtr.ysize < e.height)) return cudaErrorInvalidValue;
  const size_t sslice = spitch * p.srcPtr.ysize, dslice = dpitch * p.dstPtr.ysize;
  const char* src = static_cast<const char*>(p.srcPtr.ptr) + p.srcPos.x + p.srcPos.y * spitch + p.srcPos.z * sslice;
  char* dst = static_cast<char*>(p.dstPtr.ptr) + p.dstPos.x + p.dstPos.y * dpitch + p.dstPos.z * dslice;
  for (size_t z = 0; z < e.depth; ++z) {
    cudaError_t r = copy_2d(dst + z * dslice, dpitch, src + z * sslice, spitch, e.width, e.height, p.kind, s, true);
    if (r != cudaSuccess) return r;
  }
  return cudaSuccess;
}

}  // namespace rgpu::runtime
