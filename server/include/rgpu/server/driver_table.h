// The driver table: the CUDA driver functions rgpud calls, resolved once from a
// driver library loaded at run time (NVIDIA's libcuda.so.1 or rgpu's CPU device).
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>

#include <memory>
#include <string>

#include "rgpu/common/status.h"
#include "rgpu/cpudev/extensions.h"

namespace rgpu::server {

// Every function the server needs (RGPU_DRIVER_REQUIRED) or uses when present
// (RGPU_DRIVER_OPTIONAL), by the name cuda.h (CUDA 13.0) maps it to, so the
// table is pinned to that ABI: X(cuMemAlloc) resolves "cuMemAlloc_v2". The
// lists come from api/driver.api (server=required|optional), as
// does RGPU_DRIVER_EXTENSIONS (its extension lines).
#include "../../../generated/driver_table.inc"

#define RGPU_DRIVER_STR2(x) #x
#define RGPU_DRIVER_STR(x) RGPU_DRIVER_STR2(x)

// Function pointers into one loaded driver library. Immutable after load();
// safe to use from any thread. The library stays loaded while the table lives.
struct DriverTable {
#define RGPU_DRIVER_FIELD(fn) decltype(&::fn) fn = nullptr;
  RGPU_DRIVER_REQUIRED(RGPU_DRIVER_FIELD)
  RGPU_DRIVER_OPTIONAL(RGPU_DRIVER_FIELD)

  // rgpu's CPU device's own exports (rgpu/cpudev/extensions.h; the list is
  // driver.api's `extension` lines): device printf to a per-context sink,
  // isolation groups, aborting a context's kernels, utilization. Null with
  // NVIDIA's driver, which prints to rgpud's own stdout and has none of them,
  // except rgpuDeviceGetUtilization, which load() answers from NVIDIA's NVML
  // when this host has it (server/src/nvml_utilization.h).
  RGPU_DRIVER_EXTENSIONS(RGPU_DRIVER_FIELD)
#undef RGPU_DRIVER_FIELD

  // rgpu's CPU device (recognised by its printf extension): its device
  // memory is host memory of this process, which the transport can reach.
  bool cpu_device() const { return rgpuCtxSetPrintfCallback != nullptr; }

  std::string path;  // the library actually loaded
  std::shared_ptr<void> handle;

  // Loads `path` (dlopen) and resolves every function. A missing required
  // function is an error naming it.
  static Result<std::shared_ptr<const DriverTable>> load(const std::string& path);
};

// Finds rgpu's CPU device library next to the running rgpud (same folder,
// ../lib, or the build tree's lib/), or "" when not found.
std::string find_cpu_device_library();

}  // namespace rgpu::server
