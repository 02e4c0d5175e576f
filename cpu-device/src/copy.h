// Copies and memsets between host memory and device memory, checked against
// the live allocations at enqueue time and again when they run.
#pragma once

#include <memory>

#include "api_common.h"

namespace rgpu::cpudev {

// One side of a copy: device memory (`memory` set) or host memory. A device
// side is checked again when the copy runs, against the same group.
struct Side {
  uint64_t addr = 0;
  DeviceMemory* memory = nullptr;
  uint64_t group = kAnyGroup;
};

// A device side for `addr` (INVALID_VALUE unless [addr, addr+size) is inside
// one live allocation of some device, of isolation group `group` unless that
// is kAnyGroup: see Context::copy_group).
CUresult device_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out);
// A host side. Host memory cannot be checked, except that a restricted
// `group` may not name device memory of another group as "host" memory.
CUresult host_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out);
// Device side when addr lies in a device's range, host side otherwise.
CUresult any_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out);

// Enqueues the copy on `h` (resolved against the current context); when
// `sync`, waits for it and returns its own status.
CUresult enqueue_copy(Driver* d, const std::shared_ptr<Context>& current, CUstream h, Side dst, Side src,
                      size_t size, bool sync);
// Fills `count` elements of `elem` (1, 2 or 4) bytes with `value`.
CUresult enqueue_memset(Driver* d, const std::shared_ptr<Context>& current, CUstream h, uint64_t dst,
                        uint32_t value, size_t elem, size_t count, bool sync);

}  // namespace rgpu::cpudev
