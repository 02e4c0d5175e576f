// Entry points: device memory allocation, queries, copies and memsets.
#include <cstring>

#include "api_common.h"
#include "copy.h"

using namespace rgpu::cpudev;

namespace {

uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

CUresult dev(Driver* d, const std::shared_ptr<Context>& ctx, CUdeviceptr p, size_t size, Side* out) {
  if (size == 0) {
    *out = Side{p, nullptr};
    return CUDA_SUCCESS;
  }
  return device_side(d, p, size, ctx->copy_group(), out);
}

CUresult host(Driver* d, const std::shared_ptr<Context>& ctx, const void* p, size_t size, Side* out) {
  return host_side(d, u(p), size, ctx->copy_group(), out);
}

// The group a context that may be current restricts pointer queries to.
uint64_t query_group(Driver* d) {
  auto& stack = context_stack();
  auto ctx = stack.empty() ? nullptr : d->context(stack.back());
  return ctx ? ctx->copy_group() : kAnyGroup;
}

template <class F>
CUresult with_context(F&& f) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    return f(d, ctx);
  });
}

CUresult htod(CUdeviceptr dst, const void* src, size_t n, CUstream h, bool sync) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    Side ds, ss;
    RGPU_CU_TRY(dev(d, ctx, dst, n, &ds));
    RGPU_CU_TRY(host(d, ctx, src, n, &ss));
    return enqueue_copy(d, ctx, h, ds, ss, n, sync);
  });
}

CUresult dtoh(void* dst, CUdeviceptr src, size_t n, CUstream h, bool sync) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    Side ds, ss;
    RGPU_CU_TRY(host(d, ctx, dst, n, &ds));
    RGPU_CU_TRY(dev(d, ctx, src, n, &ss));
    return enqueue_copy(d, ctx, h, ds, ss, n, sync);
  });
}

CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h, bool sync) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    Side ds, ss;
    RGPU_CU_TRY(dev(d, ctx, dst, n, &ds));
    RGPU_CU_TRY(dev(d, ctx, src, n, &ss));
    return enqueue_copy(d, ctx, h, ds, ss, n, sync);
  });
}

CUresult memset_any(CUdeviceptr dst, uint32_t value, size_t elem, size_t n, CUstream h, bool sync) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    return enqueue_memset(d, ctx, h, dst, value, elem, n, sync);
  });
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    RGPU_CU_TRY(capture_check_unsafe(d->graphs()));
    auto r = d->device(ctx->device())->memory->allocate(bytesize, ctx->handle(), ctx->memory_group());
    if (!r) return r.status().kind() == rgpu::ErrorKind::kInvalidArgument ? CUDA_ERROR_INVALID_VALUE
                                                                          : CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = *r;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    if (dptr == 0) return CUDA_SUCCESS;
    RGPU_CU_TRY(capture_check_unsafe(d->graphs()));
    Device* dev = d->device_of(dptr);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    // As on a GPU, the free waits for the work already enqueued: a kernel
    // queued before it may still use the memory (thrust frees its temporary
    // storage right after launching the kernels that use it, then
    // synchronizes). Only contexts whose kernels can reach the allocation,
    // those of its isolation group, are waited for.
    auto a = dev->memory->find(dptr);
    const uint64_t group = ctx->copy_group();
    if (!a || a->base != dptr || (group != kAnyGroup && a->group != group)) return CUDA_ERROR_INVALID_VALUE;
    for (auto& c : d->contexts_of(dev->ordinal)) {
      if (c->group() == a->group) c->drain();
    }
    return dev->memory->release(dptr, group).is_ok() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    auto& mem = d->device(ctx->device())->memory;
    *free = mem->free_bytes();
    *total = mem->capacity();
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    Device* dev = d->device_of(dptr);
    auto a = dev ? dev->memory->find(dptr) : std::nullopt;
    uint64_t group = ctx->copy_group();
    if (!a || (group != kAnyGroup && a->group != group)) return CUDA_ERROR_NOT_FOUND;
    if (pbase) *pbase = a->base;
    if (psize) *psize = a->size;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    Device* dev = d->device_of(ptr);
    auto a = dev ? dev->memory->find(ptr) : std::nullopt;
    uint64_t group = query_group(d);
    if (!a || (group != kAnyGroup && a->group != group)) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
      case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext*>(data) = to_handle<CUcontext>(a->owner);
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *static_cast<CUdeviceptr*>(data) = ptr;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        return CUDA_ERROR_INVALID_VALUE;  // device memory is not mapped for the host
      case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *static_cast<int*>(data) = 1;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *static_cast<unsigned long long*>(data) = a->id;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        *static_cast<int*>(data) = 0;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_MAPPED:
        *static_cast<int*>(data) = 1;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data) = dev->ordinal;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *static_cast<CUdeviceptr*>(data) = a->base;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<size_t*>(data) = a->size;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *static_cast<size_t*>(data) = a->mapped;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *static_cast<unsigned int*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *static_cast<unsigned long long*>(data) = 0;
        return CUDA_SUCCESS;
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *static_cast<void**>(data) = nullptr;
        return CUDA_SUCCESS;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  });
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) { return htod(dst, src, n, nullptr, true); }
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) { return dtoh(dst, src, n, nullptr, true); }
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) { return dtod(dst, src, n, nullptr, true); }
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream h) {
  return htod(dst, src, n, h, false);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream h) {
  return dtoh(dst, src, n, h, false);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return dtod(dst, src, n, h, false);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    if (n == 0) return CUDA_SUCCESS;
    Side ds, ss;
    RGPU_CU_TRY(any_side(d, dst, n, ctx->copy_group(), &ds));
    RGPU_CU_TRY(any_side(d, src, n, ctx->copy_group(), &ss));
    return enqueue_copy(d, ctx, nullptr, ds, ss, n, true);
  });
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return with_context([&](Driver* d, const std::shared_ptr<Context>& ctx) {
    if (n == 0) return CUDA_SUCCESS;
    Side ds, ss;
    RGPU_CU_TRY(any_side(d, dst, n, ctx->copy_group(), &ds));
    RGPU_CU_TRY(any_side(d, src, n, ctx->copy_group(), &ss));
    return enqueue_copy(d, ctx, h, ds, ss, n, false);
  });
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) { return memset_any(dst, v, 1, n, nullptr, true); }
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n) { return memset_any(dst, v, 2, n, nullptr, true); }
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) { return memset_any(dst, v, 4, n, nullptr, true); }
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream h) {
  return memset_any(dst, v, 1, n, h, false);
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream h) {
  return memset_any(dst, v, 2, n, h, false);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream h) {
  return memset_any(dst, v, 4, n, h, false);
}

}  // extern "C"
