// The server's module cache.
#include "module_cache.h"

namespace rgpu::server {

ModuleCache::Image ModuleCache::find(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = images_.find(hash);
  if (it == images_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  return it->second;
}

ModuleCache::Image ModuleCache::insert(const std::string& hash, std::vector<std::byte> image) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_received += image.size();
  auto [it, added] = images_.try_emplace(hash, nullptr);
  if (added) {
    it->second = std::make_shared<const std::vector<std::byte>>(std::move(image));
    ++stats_.images;
  }
  return it->second;
}

ModuleCache::Stats ModuleCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace rgpu::server
