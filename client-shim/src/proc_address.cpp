// cuGetProcAddress (v1 and v2) over the generated variant table, and
// cuGetExportTable, which rgpu never implements.
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "../generated/driver_procs.h"
#include "rgpu/common/log.h"
#include "unimplemented.h"

// cuda.h maps the name to the v2 entry point; the v1 symbol is defined here
// under its own name.
#undef cuGetProcAddress

namespace rgpu::shim {
namespace {

constexpr cuuint64_t kKnownFlags =
    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

// The entries of one API, [first, last), or an empty range.
struct Range {
  const DriverProc* first;
  const DriverProc* last;
};

Range find_api(const char* api) noexcept {
  const DriverProc* lo = kDriverProcs;
  const DriverProc* hi = kDriverProcs + kDriverProcCount;
  while (lo < hi) {  // lower bound
    const DriverProc* mid = lo + (hi - lo) / 2;
    if (std::strcmp(mid->api, api) < 0) lo = mid + 1; else hi = mid;
  }
  const DriverProc* end = lo;
  while (end < kDriverProcs + kDriverProcCount && std::strcmp(end->api, api) == 0) ++end;
  return {lo, end};
}

void set_status(CUdriverProcAddressQueryResult* status, CUdriverProcAddressQueryResult value) noexcept {
  if (status != nullptr) *status = value;
}

// The lookup behind both entry points. CU_GET_PROC_ADDRESS_DEFAULT means the
// legacy default stream here: a program built for the per-thread default
// stream asks for it explicitly (cuda.h's inline cuGetProcAddress_v2_ptsz
// adds the flag), the driver cannot tell otherwise.
CUresult get_proc_address(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) noexcept {
  if (pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (symbol == nullptr || cuda_version <= 0 || cuda_version > kDriverProcsCudaVersion ||
      (flags & ~kKnownFlags) != 0 || (flags & kKnownFlags) == kKnownFlags) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Range range = find_api(symbol);
  if (range.first == range.last) {
    set_status(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    return CUDA_ERROR_NOT_FOUND;
  }
  const DriverProc* best = nullptr;  // the newest variant the caller's version knows
  for (const DriverProc* e = range.first; e != range.last; ++e) {
    if (e->version <= cuda_version) best = e;
  }
  if (best == nullptr) {
    set_status(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    return CUDA_ERROR_NOT_FOUND;
  }
  void (*fn)() = best->fn;
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0 && best->per_thread_fn != nullptr &&
      best->per_thread_version <= cuda_version) {
    fn = best->per_thread_fn;
  }
  *pfn = reinterpret_cast<void*>(fn);
  set_status(status, CU_GET_PROC_ADDRESS_SUCCESS);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace rgpu::shim

extern "C" {

// The CUDA 11.3 signature; CUDA 12 programs call cuGetProcAddress_v2.
RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                   cuuint64_t flags) {
  return rgpu::shim::get_proc_address(symbol, pfn, cudaVersion, flags, nullptr);
}

RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                      cuuint64_t flags,
                                                      CUdriverProcAddressQueryResult* symbolStatus) {
  return rgpu::shim::get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

// NVIDIA's private tables are not part of rgpu (see docs/api-surface.md).
RGPU_SHIM_EXPORT CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
