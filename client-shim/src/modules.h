// The client's view of loaded modules and their functions: kernel parameter
// layouts (read from the image on the client, so launches need no round
// trip) and function attributes fetched once.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::shim {

struct FunctionInfo {
  uint64_t module = 0;
  fatbin::KernelInfo kernel;
  // cuFuncGetAttribute values by attribute, once fetched (nullopt: missing).
  std::vector<std::optional<int>> attributes;
  // Fetched with them: the code its server refuses a launch of it with (0:
  // it may be launched; the CPU device cannot run every kernel exactly),
  // and the server's reason.
  CUresult refusal = CUDA_SUCCESS;
  std::string refusal_reason;
};

// Thread-safe registry. Handles are minted by the caller.
class ModuleRegistry {
 public:
  void add_module(uint64_t handle, std::vector<fatbin::KernelInfo> kernels);
  // Removes the module and its functions; false if unknown.
  bool remove_module(uint64_t handle);
  bool has_module(uint64_t handle);
  // The kernel named `name` in `module`, if it has one.
  std::optional<fatbin::KernelInfo> kernel(uint64_t module, const std::string& name);

  void add_function(uint64_t handle, FunctionInfo info);
  // A copy of the function's info; false if unknown.
  bool function(uint64_t handle, FunctionInfo* out);
  void set_attributes(uint64_t handle, std::vector<std::optional<int>> attributes, CUresult refusal,
                      std::string refusal_reason);
  void set_attribute(uint64_t handle, int attribute, int value);

  // Whether this process already made the server hold the image `hash`.
  bool uploaded(const std::string& hash);
  void mark_uploaded(const std::string& hash);

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::map<std::string, fatbin::KernelInfo>> modules_;
  std::unordered_map<uint64_t, FunctionInfo> functions_;
  std::set<std::string> uploaded_;
};

}  // namespace rgpu::shim
