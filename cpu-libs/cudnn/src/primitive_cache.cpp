// The LRU of oneDNN primitives (primitive_cache.h).
#include "primitive_cache.h"

namespace rgpu::cpudnn {

void Primitive::execute(const dnnl::engine& engine, dnnl::stream& stream,
                        std::unordered_map<int, dnnl::memory> args) const {
  if (scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, engine));
  prim.execute(stream, args);
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Primitive PrimitiveCache::get(const PrimitiveKey& key, const std::function<Primitive()>& make) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key.bytes());
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  Primitive made = make();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key.bytes());
  if (it != index_.end()) return it->second->second;  // another caller stored one meanwhile
  lru_.emplace_front(key.bytes(), made);
  index_.emplace(key.bytes(), lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return made;
}

PrimitiveCache::Stats PrimitiveCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {hits_, misses_, lru_.size()};
}

}  // namespace rgpu::cpudnn
