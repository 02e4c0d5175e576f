// CUDA_VISIBLE_DEVICES on the client: which of the session's devices the
// program sees, and in which order.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>
#include <vector>

namespace rgpu::shim {

// The UUID as NVML and nvidia-smi print it: "GPU-" and 32 lower-case hex
// digits grouped 8-4-4-4-12.
std::string uuid_text(const CUuuid& uuid);

// The session's device indices that `spec` selects, in its order, as a
// local driver reads CUDA_VISIBLE_DEVICES: a comma-separated list of
// indices or UUIDs ("GPU-" and any unambiguous prefix of the rest, case
// ignored), blanks around entries ignored. The list ends at the first entry
// that is not a device, names an ambiguous prefix, or repeats a device;
// what came before it stays selected. An empty `spec` selects nothing.
std::vector<int> select_visible(std::string_view spec, const std::vector<CUuuid>& uuids);

}  // namespace rgpu::shim
