// NVTX (libnvToolsExt.so.1): every function is a local no-op that answers
// what NVTX itself answers when no tool is attached, since rgpu records no
// ranges. nvToolsExt.h is not included: the CUDA 13 toolkit's NVTX 3 header
// defines these names inline. Parameters are spelled by their ABI (handles
// and attribute structs as pointers, ids as uint64_t, names as char or
// wchar_t pointers); the list is api/nvtx.api's `local` lines.
#include <cstdint>

#include "unimplemented.h"

namespace {

// nvToolsExt.h: push/pop "return NVTX_NO_PUSH_POP_TRACKING if no tool is
// attached" (its value, -2); range starts return id 0 and creations a null
// handle in that case.
constexpr int kNoPushPopTracking = -2;

}  // namespace

extern "C" {

RGPU_SHIM_EXPORT int nvtxInitialize(const void*) noexcept { return 0; }

RGPU_SHIM_EXPORT void nvtxMarkA(const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxMarkW(const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxMarkEx(const void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainMarkEx(void*, const void*) noexcept {}

RGPU_SHIM_EXPORT uint64_t nvtxRangeStartA(const char*) noexcept { return 0; }
RGPU_SHIM_EXPORT uint64_t nvtxRangeStartW(const wchar_t*) noexcept { return 0; }
RGPU_SHIM_EXPORT uint64_t nvtxRangeStartEx(const void*) noexcept { return 0; }
RGPU_SHIM_EXPORT uint64_t nvtxDomainRangeStartEx(void*, const void*) noexcept { return 0; }
RGPU_SHIM_EXPORT void nvtxRangeEnd(uint64_t) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainRangeEnd(void*, uint64_t) noexcept {}

RGPU_SHIM_EXPORT int nvtxRangePushA(const char*) noexcept { return kNoPushPopTracking; }
RGPU_SHIM_EXPORT int nvtxRangePushW(const wchar_t*) noexcept { return kNoPushPopTracking; }
RGPU_SHIM_EXPORT int nvtxRangePushEx(const void*) noexcept { return kNoPushPopTracking; }
RGPU_SHIM_EXPORT int nvtxDomainRangePushEx(void*, const void*) noexcept { return kNoPushPopTracking; }
RGPU_SHIM_EXPORT int nvtxRangePop() noexcept { return kNoPushPopTracking; }
RGPU_SHIM_EXPORT int nvtxDomainRangePop(void*) noexcept { return kNoPushPopTracking; }

RGPU_SHIM_EXPORT void* nvtxDomainCreateA(const char*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void* nvtxDomainCreateW(const wchar_t*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void nvtxDomainDestroy(void*) noexcept {}
RGPU_SHIM_EXPORT void* nvtxDomainRegisterStringA(void*, const char*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void* nvtxDomainRegisterStringW(void*, const wchar_t*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void* nvtxDomainResourceCreate(void*, void*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void nvtxDomainResourceDestroy(void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainNameCategoryA(void*, uint32_t, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainNameCategoryW(void*, uint32_t, const wchar_t*) noexcept {}

RGPU_SHIM_EXPORT void* nvtxDomainSyncUserCreate(void*, const void*) noexcept { return nullptr; }
RGPU_SHIM_EXPORT void nvtxDomainSyncUserDestroy(void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainSyncUserAcquireStart(void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainSyncUserAcquireFailed(void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainSyncUserAcquireSuccess(void*) noexcept {}
RGPU_SHIM_EXPORT void nvtxDomainSyncUserReleasing(void*) noexcept {}

RGPU_SHIM_EXPORT void nvtxNameCategoryA(uint32_t, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCategoryW(uint32_t, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameOsThreadA(uint32_t, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameOsThreadW(uint32_t, const wchar_t*) noexcept {}

// The CUDA driver's, the runtime's and OpenCL's objects: all pointers or ints.
RGPU_SHIM_EXPORT void nvtxNameCuDeviceA(int, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuDeviceW(int, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuContextA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuContextW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuStreamA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuStreamW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuEventA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCuEventW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaDeviceA(int, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaDeviceW(int, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaStreamA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaStreamW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaEventA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameCudaEventW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClCommandQueueA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClCommandQueueW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClContextA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClContextW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClDeviceA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClDeviceW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClEventA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClEventW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClMemObjectA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClMemObjectW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClProgramA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClProgramW(void*, const wchar_t*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClSamplerA(void*, const char*) noexcept {}
RGPU_SHIM_EXPORT void nvtxNameClSamplerW(void*, const wchar_t*) noexcept {}

}  // extern "C"
