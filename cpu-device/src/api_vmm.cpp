// Entry points: virtual memory management (cuMemCreate, cuMemAddressReserve,
// cuMemMap, cuMemSetAccess, ...), as the caching allocator's expandable
// segments use it. The memory side is in memory_vmm.cpp.
#include "api_common.h"

using namespace rgpu::cpudev;

namespace {

// The granularity CUDA reports on GPUs; chunks and mappings are multiples.
constexpr size_t kGranularity = 2u << 20;

CUresult to_cu(const rgpu::Status& s) {
  if (s.is_ok()) return CUDA_SUCCESS;
  switch (s.kind()) {
    case rgpu::ErrorKind::kOverloaded: return CUDA_ERROR_OUT_OF_MEMORY;
    case rgpu::ErrorKind::kUnimplemented: return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

bool device_location(Driver* d, const CUmemLocation& loc) {
  return loc.type == CU_MEM_LOCATION_TYPE_DEVICE && loc.id >= 0 && loc.id < d->device_count();
}

bool valid_prop(Driver* d, const CUmemAllocationProp* prop) {
  return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED && device_location(d, prop->location);
}

// The device whose memory holds chunk `handle`.
Device* device_of_handle(Driver* d, uint64_t handle) {
  for (int i = 0; i < d->device_count(); ++i) {
    if (d->device(i)->memory->physical_size(handle)) return d->device(i);
  }
  return nullptr;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!granularity || !valid_prop(d, prop)) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                             unsigned long long flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!handle || flags != 0 || !valid_prop(d, prop)) return CUDA_ERROR_INVALID_VALUE;
    if (size == 0 || size % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    // A shareable handle type may be asked for (PyTorch does); exporting one
    // is not supported, so the request changes nothing.
    auto r = d->device(prop->location.id)->memory->create_physical(size, ctx->handle(), ctx->memory_group());
    if (!r) return to_cu(r.status());
    *handle = *r;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    Device* dev = device_of_handle(d, handle);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(dev->memory->release_physical(handle));
  });
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!ptr || flags != 0 || size == 0 || size % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment && (alignment & (alignment - 1))) return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment < kGranularity ? kGranularity : alignment;
    auto r = d->device(ctx->device())->memory->reserve(size, align, addr);
    if (!r) return to_cu(r.status());
    *ptr = *r;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    Device* dev = d->device_of(ptr);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(dev->memory->unreserve(ptr, size));
  });
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (flags != 0 || offset != 0) return CUDA_ERROR_INVALID_VALUE;
    Device* dev = d->device_of(ptr);
    if (!dev || dev != device_of_handle(d, handle)) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(dev->memory->map(ptr, size, handle));
  });
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    Device* dev = d->device_of(ptr);
    if (!dev || size == 0) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(dev->memory->unmap(ptr, size));
  });
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    Device* dev = d->device_of(ptr);
    if (!dev || !desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    bool access = false;
    for (size_t i = 0; i < count; ++i) {
      if (!device_location(d, desc[i].location)) return CUDA_ERROR_INVALID_VALUE;
      // Devices do not reach each other's memory (no peer access).
      if (desc[i].location.id != dev->ordinal) return CUDA_ERROR_NOT_SUPPORTED;
      switch (desc[i].flags) {
        case CU_MEM_ACCESS_FLAGS_PROT_NONE: access = false; break;
        case CU_MEM_ACCESS_FLAGS_PROT_READ:
        case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: access = true; break;
        default: return CUDA_ERROR_INVALID_VALUE;
      }
    }
    return to_cu(dev->memory->set_access(ptr, size, access));
  });
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!flags || !location || !device_location(d, *location)) return CUDA_ERROR_INVALID_VALUE;
    Device* dev = d->device_of(ptr);
    auto a = dev ? dev->memory->access(ptr) : std::nullopt;
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *flags = (*a && location->id == dev->ordinal) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    Device* dev = device_of_handle(d, handle);
    if (!prop || !dev) return CUDA_ERROR_INVALID_VALUE;
    *prop = CUmemAllocationProp{};
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = dev->ordinal;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    Device* dev = d->device_of(reinterpret_cast<uint64_t>(addr));
    auto h = dev ? dev->memory->retain_mapped(reinterpret_cast<uint64_t>(addr)) : std::nullopt;
    if (!h) return CUDA_ERROR_INVALID_VALUE;
    *handle = *h;
    return CUDA_SUCCESS;
  });
}

}  // extern "C"
