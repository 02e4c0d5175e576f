// Device attributes of a CPU device.
#pragma once

#include "config.h"
#include "cuda_api.h"

namespace rgpu::cpudev {

// The value of `attr` for device `ordinal`; false for a value that is not a
// CUdevice_attribute of CUDA 13.0.
bool device_attribute(CUdevice_attribute attr, const Config& cfg, int ordinal, int* out);

}  // namespace rgpu::cpudev
