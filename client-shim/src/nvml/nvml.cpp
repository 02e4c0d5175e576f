// NVML (libnvidia-ml.so.1) answered from the session's devices.
//
// Monitoring tools and PyTorch (torch.cuda.device_count with
// PYTORCH_NVML_BASED_CUDA_CHECK=1, memory_usage, pynvml) ask NVML about the
// GPUs. On an rgpu client the GPUs are the devices the server granted this
// session, so NVML's answers come from the same place as the driver's: the
// device table of the handshake (names, UUIDs, totals, attributes, no round
// trip) and, for memory in use, the server's cuMemGetInfo in that device's
// primary context; utilization rates from the server's rgpuDeviceGetUtilization
// (the CPU device measures them; with NVIDIA's driver rgpud asks NVIDIA's
// NVML). A device handle is the address of a slot in a fixed table; anything
// else passed as a handle is an invalid argument.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "../api_common.h"
#include "../visible_devices.h"
#include "nvml_abi.h"
#include "rgpu/common/log.h"
#include "rgpu/cpudev/extensions.h"

struct nvmlDevice_st {
  int ordinal;
};

namespace {

constexpr int kMaxDevices = 64;

nvmlDevice_st g_devices[kMaxDevices] = {};
std::atomic<int> g_init_count{0};
std::once_flag g_table_once;

void fill_table() {
  for (int i = 0; i < kMaxDevices; ++i) g_devices[i].ordinal = i;
}

bool initialized() { return g_init_count.load() > 0; }

int device_count() {
  int n = 0;
  if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return std::min(n, kMaxDevices);
}

// The ordinal a handle names, or -1 when it is not one of ours.
int ordinal_of(nvmlDevice_t device) {
  if (device < g_devices || device >= g_devices + kMaxDevices) return -1;
  int ordinal = static_cast<int>(device - g_devices);
  return ordinal < device_count() ? ordinal : -1;
}

// Copies `text` into a caller's buffer of `length` bytes, NVML style: too
// small a buffer is NVML_ERROR_INSUFFICIENT_SIZE and nothing is written.
nvmlReturn_t copy_out(const std::string& text, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

using ::rgpu::shim::uuid_text;  // "GPU-" and 8-4-4-4-12 hex, as NVML prints it

int attribute(CUdevice_attribute attr, int ordinal) {
  int value = 0;
  if (cuDeviceGetAttribute(&value, attr, ordinal) != CUDA_SUCCESS) return 0;
  return value;
}

nvmlReturn_t pci_info(int ordinal, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  pci->domain = static_cast<unsigned>(attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, ordinal));
  pci->bus = static_cast<unsigned>(attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, ordinal));
  pci->device = static_cast<unsigned>(attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, ordinal));
  pci->pciDeviceId = static_cast<unsigned>(attribute(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, ordinal));
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain & 0xffff, pci->bus,
                pci->device);
  return NVML_SUCCESS;
}

// Runs `query` with the device's primary context current (retained for the
// query only): the remoted calls run in a context, NVML's need none.
template <class Query>
nvmlReturn_t in_primary_context(int ordinal, Query&& query) {
  CUcontext ctx = nullptr;
  if (cuDevicePrimaryCtxRetain(&ctx, ordinal) != CUDA_SUCCESS) return NVML_ERROR_UNKNOWN;
  nvmlReturn_t status = NVML_ERROR_UNKNOWN;
  if (cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
    status = query();
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
  cuDevicePrimaryCtxRelease(ordinal);
  return status;
}

// Free and total memory of a device as the server counts them.
nvmlReturn_t memory_info(int ordinal, unsigned long long* total, unsigned long long* free) {
  return in_primary_context(ordinal, [&] {
    size_t f = 0, t = 0;
    if (cuMemGetInfo_v2(&f, &t) != CUDA_SUCCESS) return NVML_ERROR_UNKNOWN;
    *total = t;
    *free = f;
    return NVML_SUCCESS;
  });
}

#define NVML_DEVICE_OR_RETURN(handle, var)          \
  if (!initialized()) return NVML_ERROR_UNINITIALIZED; \
  int var = ordinal_of(handle);                      \
  if (var < 0) return NVML_ERROR_INVALID_ARGUMENT;

#define NVML_BEGIN try {
#define NVML_END          \
  }                       \
  catch (...) {           \
    return NVML_ERROR_UNKNOWN; \
  }

}  // namespace

// ---- library -----------------------------------------------------------------

RGPU_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  NVML_BEGIN
  (void)flags;  // NVML_INIT_FLAG_NO_GPUS / NO_ATTACH: nothing is attached here
  std::call_once(g_table_once, fill_table);
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    RGPU_WARN("nvml init failed: the rgpu session did not start cuda_error=%d", static_cast<int>(r));
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  g_init_count.fetch_add(1);
  return NVML_SUCCESS;
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
RGPU_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

RGPU_EXPORT nvmlReturn_t nvmlShutdown(void) {
  int count = g_init_count.load();
  while (count > 0 && !g_init_count.compare_exchange_weak(count, count - 1)) {
  }
  return count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

RGPU_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
  }
}

// ---- system ------------------------------------------------------------------

RGPU_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  NVML_BEGIN
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  return copy_out(std::string("rgpu-") + RGPU_VERSION_STRING, version, length);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  NVML_BEGIN
  // The CUDA release whose driver API this library implements, as "13.0".
  return copy_out(std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10), version,
                  length);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
  return cuDriverGetVersion(cudaDriverVersion) == CUDA_SUCCESS ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

RGPU_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

// ---- devices -----------------------------------------------------------------

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  NVML_BEGIN
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned>(device_count());
  return NVML_SUCCESS;
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  NVML_BEGIN
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!device || index >= static_cast<unsigned>(device_count())) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return NVML_SUCCESS;
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  NVML_BEGIN
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < device_count(); ++i) {
    CUuuid id{};
    if (cuDeviceGetUuid_v2(&id, i) == CUDA_SUCCESS && strcasecmp(uuid_text(id).c_str(), uuid) == 0) {
      *device = &g_devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  NVML_BEGIN
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!pciBusId || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < device_count(); ++i) {
    nvmlPciInfo_t pci;
    pci_info(i, &pci);
    if (strcasecmp(pci.busId, pciBusId) == 0 || strcasecmp(pci.busIdLegacy, pciBusId) == 0) {
      *device = &g_devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  NVML_DEVICE_OR_RETURN(device, ordinal);
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(ordinal);
  return NVML_SUCCESS;
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return nvmlDeviceGetIndex(device, minorNumber);
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  NVML_BEGIN
  NVML_DEVICE_OR_RETURN(device, ordinal);
  char text[rgpu::nvml::kNameBufferSize] = {};
  if (cuDeviceGetName(text, sizeof text, ordinal) != CUDA_SUCCESS) return NVML_ERROR_UNKNOWN;
  return copy_out(text, name, length);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  NVML_BEGIN
  NVML_DEVICE_OR_RETURN(device, ordinal);
  CUuuid id{};
  if (cuDeviceGetUuid_v2(&id, ordinal) != CUDA_SUCCESS) return NVML_ERROR_UNKNOWN;
  return copy_out(uuid_text(id), uuid, length);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  NVML_DEVICE_OR_RETURN(device, ordinal);
  if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
  *major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal);
  *minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ordinal);
  return NVML_SUCCESS;
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  NVML_DEVICE_OR_RETURN(device, ordinal);
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  return pci_info(ordinal, pci);
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

namespace {

// Fills either memory structure (v1 has no version and no reserved field).
template <typename Memory>
nvmlReturn_t fill_memory(nvmlDevice_t device, Memory* memory) {
  NVML_DEVICE_OR_RETURN(device, ordinal);
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  if constexpr (std::is_same_v<Memory, nvmlMemory_v2_t>) {
    if (memory->version != rgpu::nvml::kMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->reserved = 0;  // nothing of a session's quota is set aside
  }
  unsigned long long total = 0, free = 0;
  if (nvmlReturn_t r = memory_info(ordinal, &total, &free); r != NVML_SUCCESS) return r;
  memory->total = total;
  memory->free = free;
  memory->used = total - std::min(free, total);
  return NVML_SUCCESS;
}

}  // namespace

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  NVML_BEGIN
  return fill_memory(device, memory);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  NVML_BEGIN
  return fill_memory(device, memory);
  NVML_END
}

RGPU_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  NVML_BEGIN
  NVML_DEVICE_OR_RETURN(device, ordinal);
  if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
  return in_primary_context(ordinal, [&] {
    unsigned gpu = 0, memory = 0;
    CUresult r = rgpuDeviceGetUtilization(&gpu, &memory, ordinal);
    // A server whose driver cannot measure (NVIDIA's, with no NVML next to
    // it) answers not supported, as NVML does for such a device.
    if (r == CUDA_ERROR_NOT_SUPPORTED) return NVML_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS || gpu > 100 || memory > 100) return NVML_ERROR_UNKNOWN;
    utilization->gpu = gpu;
    utilization->memory = memory;
    return NVML_SUCCESS;
  });
  NVML_END
}
