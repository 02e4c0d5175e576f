// NVIDIA's ways of dividing a GPU, found on the host before rgpud opens the
// driver: MIG instances (through NVML, loaded with dlopen), an MPS daemon,
// and green contexts (docs/sharing.md says which rgpud uses).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rgpu::server {

// The devices to open when some GPU has MIG enabled: each MIG instance by its
// UUID ("MIG-..."), and each GPU without MIG by its own ("GPU-..."), in
// NVML's order. Empty `devices` when NVML is missing or no GPU has MIG on.
struct MigLayout {
  std::vector<std::string> devices;
  size_t instances = 0;  // MIG instances among them
};
MigLayout discover_mig();

// Whether an MPS control daemon appears to run for this user: its pipe
// directory (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps) has a control pipe.
bool mps_daemon_running();

// Whether the driver library at `path` exports green contexts (cuGreenCtxCreate).
bool driver_has_green_contexts(const std::string& path);

}  // namespace rgpu::server
