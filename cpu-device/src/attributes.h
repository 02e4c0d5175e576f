// Device attributes of a CPU device.
#pragma once

#include "config.h"
#include "cuda_api.h"

namespace rgpu::cpudev {

// Persisting-L2 figures reported as a GPU of the reported 40 MiB L2 does
// (three quarters of it; a window of up to 128 MiB less 4 KiB). The CPU
// device accepts the hints and needs none (docs/cpu-device.md).
inline constexpr int kMaxPersistingL2Bytes = 30 * 1024 * 1024;
inline constexpr int kMaxAccessPolicyWindowBytes = 128 * 1024 * 1024 - 4096;

// The value of `attr` for device `ordinal`; false for a value that is not a
// CUdevice_attribute of CUDA 13.0.
bool device_attribute(CUdevice_attribute attr, const Config& cfg, int ordinal, int* out);

}  // namespace rgpu::cpudev
