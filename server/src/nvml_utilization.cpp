// NVIDIA's NVML behind rgpuDeviceGetUtilization (dlopen; no NVML header on
// the build host, so the three functions' ABI is declared here).
#include "nvml_utilization.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "rgpu/common/log.h"

namespace rgpu::server {

namespace {

// NVML's ABI as libnvidia-ml.so.1 exports it (nvml.h).
using NvmlReturn = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
struct NvmlDevice;
struct NvmlUtilization {
  unsigned gpu;
  unsigned memory;
};
constexpr NvmlReturn kNvmlSuccess = 0;

struct Nvml {
  NvmlReturn (*init)() = nullptr;  // nvmlInit_v2
  NvmlReturn (*by_uuid)(const char*, NvmlDevice**) = nullptr;  // nvmlDeviceGetHandleByUUID
  NvmlReturn (*utilization)(NvmlDevice*, NvmlUtilization*) = nullptr;  // nvmlDeviceGetUtilizationRates
  std::atomic<DeviceUuidFn> uuid{nullptr};
  bool ready = false;
};

// Loaded once: see nvml_utilization.h for why this one is per process.
Nvml& nvml() {
  static Nvml* loaded = [] {
    auto* n = new Nvml;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      RGPU_INFO("device utilization unavailable reason=\"cannot load libnvidia-ml.so.1\"");
      return n;
    }
    n->init = reinterpret_cast<decltype(n->init)>(dlsym(lib, "nvmlInit_v2"));
    n->by_uuid = reinterpret_cast<decltype(n->by_uuid)>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    n->utilization = reinterpret_cast<decltype(n->utilization)>(dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    if (!n->init || !n->by_uuid || !n->utilization) {
      RGPU_INFO("device utilization unavailable reason=\"libnvidia-ml.so.1 lacks a function\"");
      return n;
    }
    NvmlReturn r = n->init();
    if (r != kNvmlSuccess) {
      RGPU_INFO("device utilization unavailable reason=\"nvmlInit_v2 failed\" nvml_status=%d", r);
      return n;
    }
    n->ready = true;
    RGPU_INFO("device utilization source=libnvidia-ml.so.1");
    return n;
  }();
  return *loaded;
}

CUresult from_nvml(unsigned* gpu, unsigned* memory, CUdevice dev) {
  if (!gpu || !memory) return CUDA_ERROR_INVALID_VALUE;
  Nvml& n = nvml();
  DeviceUuidFn uuid = n.uuid.load();
  CUuuid id{};
  if (!uuid) return CUDA_ERROR_NOT_SUPPORTED;
  if (CUresult r = uuid(&id, dev); r != CUDA_SUCCESS) return r;
  // NVML names a GPU "GPU-" and its 16 bytes as 8-4-4-4-12 hex digits.
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  char text[64];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  NvmlDevice* device = nullptr;
  NvmlUtilization u{};
  if (n.by_uuid(text, &device) != kNvmlSuccess || n.utilization(device, &u) != kNvmlSuccess) {
    return CUDA_ERROR_NOT_SUPPORTED;  // e.g. a MIG instance, which NVML does not measure
  }
  *gpu = u.gpu;
  *memory = u.memory;
  return CUDA_SUCCESS;
}

}  // namespace

DeviceUtilizationFn nvml_utilization(DeviceUuidFn uuid) {
  if (!uuid) return nullptr;
  Nvml& n = nvml();
  if (!n.ready) return nullptr;
  // The driver is loaded for the life of the process, as NVML is.
  n.uuid.store(uuid);
  return &from_nvml;
}

}  // namespace rgpu::server
