// The CPU device's cache of parsed PTX programs.
#include "program_cache.h"

namespace rgpu::cpudev {

Result<std::shared_ptr<const ptx::Program>> ProgramCache::get(const fatbin::ContentHash& key, const Make& make) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      ++stats_.hits;
      return it->second.program;
    }
    ++stats_.misses;
  }
  uint64_t text_bytes = 0;
  Result<std::shared_ptr<const ptx::Program>> made = make(&text_bytes);
  if (!made.is_ok() || text_bytes > limit_) return made;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.program;  // another load got there first
  lru_.push_front(key);
  entries_.emplace(key, Entry{made.value(), text_bytes, lru_.begin()});
  stats_.bytes += text_bytes;
  ++stats_.programs;
  while (stats_.bytes > limit_ && !lru_.empty()) {
    auto victim = entries_.find(lru_.back());
    stats_.bytes -= victim->second.bytes;
    --stats_.programs;
    entries_.erase(victim);
    lru_.pop_back();
  }
  return made;
}

ProgramCache::Stats ProgramCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace rgpu::cpudev
