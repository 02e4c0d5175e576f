// Entry points: pitched (2D) copies and memsets, and peer copies.
#include <cstring>

#include "api_common.h"
#include "copy.h"

using namespace rgpu::cpudev;

namespace {

// One side of a pitched copy: its first byte and pitch.
struct Plane {
  Side side;
  size_t pitch = 0;
};

// Bytes from the first byte of the first row to the end of the last row;
// false on overflow.
bool span(size_t width, size_t height, size_t pitch, size_t* out) {
  if (height == 0 || width == 0) {
    *out = 0;
    return true;
  }
  if (height > 1 && pitch < width) return false;
  size_t rows = height - 1;
  if (rows && pitch > (SIZE_MAX - width) / rows) return false;
  *out = rows * pitch + width;
  return true;
}

CUresult plane_of(Driver* d, uint64_t group, CUmemorytype type, const void* host, CUdeviceptr dev, size_t x,
                  size_t y, size_t pitch, size_t width, size_t height, Plane* out) {
  size_t bytes = 0;
  if (!span(width, height, pitch, &bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (y && pitch > (SIZE_MAX - x) / y) return CUDA_ERROR_INVALID_VALUE;
  size_t offset = y * pitch + x;
  uint64_t base = 0;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      base = reinterpret_cast<uint64_t>(host);
      if (!base) return CUDA_ERROR_INVALID_VALUE;
      RGPU_CU_TRY(host_side(d, base + offset, bytes, group, &out->side));
      break;
    case CU_MEMORYTYPE_DEVICE:
      RGPU_CU_TRY(device_side(d, dev + offset, bytes, group, &out->side));
      break;
    case CU_MEMORYTYPE_UNIFIED:
      RGPU_CU_TRY(any_side(d, dev + offset, bytes, group, &out->side));
      break;
    case CU_MEMORYTYPE_ARRAY:
      return CUDA_ERROR_NOT_SUPPORTED;  // the CPU device has no CUDA arrays
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  out->pitch = pitch;
  return CUDA_SUCCESS;
}

CUresult copy2d(const CUDA_MEMCPY2D* p, CUstream h, bool sync) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> current;
    RGPU_CU_TRY(enter(&d, &current));
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    Plane dst, src;
    const uint64_t group = current->copy_group();
    RGPU_CU_TRY(plane_of(d, group, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                         p->dstPitch, p->WidthInBytes, p->Height, &dst));
    RGPU_CU_TRY(plane_of(d, group, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                         p->srcPitch, p->WidthInBytes, p->Height, &src));
    size_t width = p->WidthInBytes, height = p->Height;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> stream;
    RGPU_CU_TRY(resolve_stream(d, current, h, &ctx, &stream));
    size_t dst_bytes = 0, src_bytes = 0;
    span(width, height, dst.pitch, &dst_bytes);
    span(width, height, src.pitch, &src_bytes);
    auto op = [dst, src, width, height, dst_bytes, src_bytes]() -> CUresult {
      DeviceMemory::Pin p1 = dst.side.memory ? dst.side.memory->pin() : DeviceMemory::Pin();
      DeviceMemory::Pin p2 = src.side.memory ? src.side.memory->pin() : DeviceMemory::Pin();
      if (dst.side.memory && !dst.side.memory->check(dst.side.addr, dst_bytes, dst.side.group)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (src.side.memory && !src.side.memory->check(src.side.addr, src_bytes, src.side.group)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      for (size_t r = 0; r < height; ++r) {
        std::memmove(reinterpret_cast<void*>(dst.side.addr + r * dst.pitch),
                     reinterpret_cast<const void*>(src.side.addr + r * src.pitch), width);
      }
      return CUDA_SUCCESS;
    };
    if (!sync) {
      return ctx->enqueue(stream, {}, op, OpKind::kDevice, CU_GRAPH_NODE_TYPE_MEMCPY) ? CUDA_SUCCESS
                                                                                     : capture_refusal();
    }
    RGPU_CU_TRY(capture_check_unsafe(d->graphs()));
    RGPU_CU_TRY(ctx->check_wait(stream));
    auto result = std::make_shared<CUresult>(CUDA_SUCCESS);
    uint64_t seq = ctx->enqueue(stream, {}, [op, result] {
      *result = op();
      return CUDA_SUCCESS;
    });
    if (!seq) return capture_refusal();
    stream->wait(seq);
    return *result;
  });
}

CUresult memset2d(CUdeviceptr dst, size_t pitch, uint32_t value, size_t elem, size_t width, size_t height,
                  CUstream h, bool sync) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> current;
    RGPU_CU_TRY(enter(&d, &current));
    if (width > SIZE_MAX / elem) return CUDA_ERROR_INVALID_VALUE;
    size_t row = width * elem, bytes = 0;
    if (dst % elem || pitch % elem || !span(row, height, pitch, &bytes)) return CUDA_ERROR_INVALID_VALUE;
    if (bytes == 0) return CUDA_SUCCESS;
    Side whole;
    RGPU_CU_TRY(device_side(d, dst, bytes, current->copy_group(), &whole));
    // Each row is a memset of its own on the same stream, in order.
    for (size_t r = 0; r < height; ++r) {
      RGPU_CU_TRY(enqueue_memset(d, current, h, dst + r * pitch, value, elem, width, sync && r + 1 == height));
    }
    return CUDA_SUCCESS;
  });
}

CUresult peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n, CUstream h,
              bool sync) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> current;
    RGPU_CU_TRY(enter(&d, &current));
    if (!d->context(to_u64(dst_ctx)) || !d->context(to_u64(src_ctx))) return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0) return CUDA_SUCCESS;
    Side ds, ss;
    RGPU_CU_TRY(device_side(d, dst, n, current->copy_group(), &ds));
    RGPU_CU_TRY(device_side(d, src, n, current->copy_group(), &ss));
    return enqueue_copy(d, current, h, ds, ss, n, sync);
  });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* pCopy) { return copy2d(pCopy, nullptr, true); }
CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* pCopy) { return copy2d(pCopy, nullptr, true); }
CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D* pCopy, CUstream h) { return copy2d(pCopy, h, false); }

CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t hgt) {
  return memset2d(dst, pitch, v, 1, w, hgt, nullptr, true);
}
CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t hgt) {
  return memset2d(dst, pitch, v, 2, w, hgt, nullptr, true);
}
CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t hgt) {
  return memset2d(dst, pitch, v, 4, w, hgt, nullptr, true);
}
CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t hgt, CUstream h) {
  return memset2d(dst, pitch, v, 1, w, hgt, h, false);
}
CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t hgt,
                                    CUstream h) {
  return memset2d(dst, pitch, v, 2, w, hgt, h, false);
}
CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t hgt, CUstream h) {
  return memset2d(dst, pitch, v, 4, w, hgt, h, false);
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n) {
  return peer(dst, dst_ctx, src, src_ctx, n, nullptr, true);
}
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                   CUstream h) {
  return peer(dst, dst_ctx, src, src_ctx, n, h, false);
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer_dev) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (!d->device(dev) || !d->device(peer_dev)) return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer_dev ? 1 : 0;  // all devices share the host's memory
  return CUDA_SUCCESS;
}

}  // extern "C"
