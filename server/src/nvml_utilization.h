// rgpuDeviceGetUtilization for a driver that lacks it (NVIDIA's), answered
// by NVIDIA's NVML on this host when libnvidia-ml.so.1 can be loaded.
#pragma once

#include <cuda.h>

#include "rgpu/cpudev/extensions.h"

namespace rgpu::server {

using DeviceUtilizationFn = decltype(&::rgpuDeviceGetUtilization);
using DeviceUuidFn = decltype(&::cuDeviceGetUuid);

// The function to put in a driver table whose driver has no
// rgpuDeviceGetUtilization, or null when NVML cannot be loaded or initialised
// here (the generated row then answers CUDA_ERROR_NOT_SUPPORTED). `uuid` is
// that driver's cuDeviceGetUuid: a device's UUID names the same physical GPU
// to NVML whatever the two libraries' orderings (CUDA_DEVICE_ORDER,
// CUDA_VISIBLE_DEVICES). NVML is loaded and initialised once per process
// and stays loaded: a table entry is a plain function pointer with no
// state of its own, and NVML's own state is per process anyway. The
// returned function answers CUDA_ERROR_NOT_SUPPORTED for a device NVML
// cannot measure. Thread-safe.
DeviceUtilizationFn nvml_utilization(DeviceUuidFn uuid);

}  // namespace rgpu::server
