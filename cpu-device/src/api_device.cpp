// Entry points: initialization, version, devices, primary contexts, errors.
#include <algorithm>
#include <cstring>

#include "api_common.h"
#include "attributes.h"
#include "errors.h"

using namespace rgpu::cpudev;

namespace {

CUresult device_of(CUdevice dev, Driver** d, Device** out) {
  RGPU_CU_TRY(enter(d));
  *out = (*d)->device(dev);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

bool valid_ctx_flags(unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) return false;
  unsigned sched = flags & CU_CTX_SCHED_MASK;
  return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN || sched == CU_CTX_SCHED_YIELD ||
         sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

}  // namespace

extern "C" {

// The pre-_v2 name, still exported by libcuda.so.1 with the same signature.
CUresult CUDAAPI cuDeviceGetUuid_v1(CUuuid* uuid, CUdevice dev) __asm__("cuDeviceGetUuid")
    __attribute__((visibility("default")));

CUresult CUDAAPI cuInit(unsigned int flags) {
  return guarded([&] { return initialize(flags); });
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!d->device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = d->device_count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  Driver* d;
  Device* device;
  RGPU_CU_TRY(device_of(dev, &d, &device));
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  size_t n = std::min(device->name.size(), static_cast<size_t>(len) - 1);
  std::memcpy(name, device->name.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  Driver* d;
  Device* device;
  RGPU_CU_TRY(device_of(dev, &d, &device));
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(uuid->bytes, device->uuid, sizeof(uuid->bytes));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v1(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  Driver* d;
  Device* device;
  RGPU_CU_TRY(device_of(dev, &d, &device));
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = device->memory->capacity();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  Driver* d;
  Device* device;
  RGPU_CU_TRY(device_of(dev, &d, &device));
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  return device_attribute(attrib, d->config(), dev, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    RGPU_CU_TRY(d->primary_retain(dev, &h));
    *pctx = to_handle<CUcontext>(h);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    return d->primary_release(dev);
  });
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!valid_ctx_flags(flags)) return CUDA_ERROR_INVALID_VALUE;
  return d->primary_set_flags(dev, flags);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  return d->primary_state(dev, flags, active);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    return d->primary_reset(dev);
  });
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error_name(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error_string(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// rgpu's extension (rgpu/cpudev/extensions.h): the device's busy shares over
// the last second (ActivityClock).
__attribute__((visibility("default"))) CUresult rgpuDeviceGetUtilization(unsigned* gpu, unsigned* memory,
                                                                         CUdevice dev) {
  if (!gpu || !memory) return CUDA_ERROR_INVALID_VALUE;
  return guarded([&] {
    Driver* d;
    Device* device;
    RGPU_CU_TRY(device_of(dev, &d, &device));
    uint64_t now = ActivityClock::now_us();
    *gpu = device->kernels.percent(now);
    *memory = device->copies.percent(now);
    return CUDA_SUCCESS;
  });
}

}  // extern "C"
