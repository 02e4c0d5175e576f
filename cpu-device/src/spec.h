// The CPU device's shape: the limits of the compute capability 8.0 GPU it
// presents. Its attributes report them (attributes.cpp), its launches are
// checked against them (launch.cpp), its modules select code for its
// architecture and size a kernel's shared memory by them (module.cpp,
// api_module.cpp); one record, so an attribute and the check behind it never
// disagree.
#pragma once

#include <cstdint>

namespace rgpu::cpudev {

struct CpuDeviceSpec {
  int cc_major = 8;
  int cc_minor = 0;
  constexpr uint32_t sm() const { return static_cast<uint32_t>(cc_major * 10 + cc_minor); }  // 80: fatbin selection
  int warp_size = 32;

  // Launch shape.
  int max_threads_per_block = 1024;
  int max_block_x = 1024, max_block_y = 1024, max_block_z = 64;
  int max_grid_x = 2147483647, max_grid_y = 65535, max_grid_z = 65535;

  // Per block and per multiprocessor (a worker thread).
  int shared_per_block = 48 * 1024;         // static plus dynamic, without opting in
  int shared_per_block_optin = 163 * 1024;  // the most cuFuncSetAttribute may allow
  int shared_per_multiprocessor = 164 * 1024;
  int reserved_shared_per_block = 1024;
  int constant_bytes = 64 * 1024;
  int registers_per_block = 64 * 1024;
  int registers_per_multiprocessor = 64 * 1024;
  int max_threads_per_multiprocessor = 2048;
  int max_blocks_per_multiprocessor = 32;

  // Caches, reported for occupancy and L2-persistence calculators: a 40 MiB
  // L2, three quarters of it persisting, an access policy window of up to
  // 128 MiB less 4 KiB. The CPU device accepts the hints and needs none.
  int l2_bytes = 40 * 1024 * 1024;
  int max_persisting_l2_bytes = 30 * 1024 * 1024;
  int max_access_policy_window_bytes = 128 * 1024 * 1024 - 4096;
};

inline constexpr CpuDeviceSpec kSpec{};

}  // namespace rgpu::cpudev
