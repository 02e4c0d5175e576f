// The client's module and function registry.
#include "modules.h"

namespace rgpu::shim {

void ModuleRegistry::add_module(uint64_t handle, std::vector<fatbin::KernelInfo> kernels) {
  std::map<std::string, fatbin::KernelInfo> by_name;
  for (auto& k : kernels) by_name.emplace(k.name, std::move(k));
  std::lock_guard<std::mutex> lock(mu_);
  modules_[handle] = std::move(by_name);
}

bool ModuleRegistry::remove_module(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (modules_.erase(handle) == 0) return false;
  for (auto it = functions_.begin(); it != functions_.end();) {
    it = it->second.module == handle ? functions_.erase(it) : std::next(it);
  }
  return true;
}

bool ModuleRegistry::has_module(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  return modules_.count(handle) > 0;
}

std::optional<fatbin::KernelInfo> ModuleRegistry::kernel(uint64_t module, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto m = modules_.find(module);
  if (m == modules_.end()) return std::nullopt;
  auto k = m->second.find(name);
  if (k == m->second.end()) return std::nullopt;
  return k->second;
}

void ModuleRegistry::add_function(uint64_t handle, FunctionInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  functions_[handle] = std::move(info);
}

bool ModuleRegistry::function(uint64_t handle, FunctionInfo* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(handle);
  if (it == functions_.end()) return false;
  if (out) *out = it->second;
  return true;
}

void ModuleRegistry::set_attributes(uint64_t handle, std::vector<std::optional<int>> attributes, CUresult refusal,
                                    std::string refusal_reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(handle);
  if (it == functions_.end()) return;
  it->second.attributes = std::move(attributes);
  it->second.refusal = refusal;
  it->second.refusal_reason = std::move(refusal_reason);
}

void ModuleRegistry::set_attribute(uint64_t handle, int attribute, int value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(handle);
  if (it == functions_.end() || attribute < 0) return;
  if (static_cast<size_t>(attribute) < it->second.attributes.size()) it->second.attributes[attribute] = value;
}

bool ModuleRegistry::uploaded(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  return uploaded_.count(hash) > 0;
}

void ModuleRegistry::mark_uploaded(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  uploaded_.insert(hash);
}

}  // namespace rgpu::shim
