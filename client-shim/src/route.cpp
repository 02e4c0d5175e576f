// The allocation table and the server list of the device router.
#include "route.h"

#include <mutex>

namespace rgpu::shim::route {

std::optional<AllocationTable::Range> AllocationTable::add(const Range& r) {
  const uint64_t end = r.base + r.size;
  std::unique_lock lock(mu_);
  // Every range starting before `end` whose own end is past r.base overlaps;
  // ranges never overlap each other, so walking back from `end` stops at the
  // first one that ends at or before r.base.
  std::vector<uint64_t> stale;
  for (auto it = ranges_.lower_bound(end); it != ranges_.begin();) {
    --it;
    if (it->second.base + it->second.size <= r.base) break;
    if (it->second.server != r.server) return it->second;
    stale.push_back(it->first);
  }
  for (uint64_t base : stale) ranges_.erase(base);
  ranges_[r.base] = r;
  return std::nullopt;
}

bool AllocationTable::remove(uint64_t base) {
  std::unique_lock lock(mu_);
  return ranges_.erase(base) > 0;
}

std::optional<AllocationTable::Range> AllocationTable::find(uint64_t p) const {
  std::shared_lock lock(mu_);
  auto it = ranges_.upper_bound(p);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (p - it->second.base >= it->second.size) return std::nullopt;
  return it->second;
}

size_t AllocationTable::size() const {
  std::shared_lock lock(mu_);
  return ranges_.size();
}

std::optional<std::vector<std::string>> parse_servers(const std::string& text, std::string* problem) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    if (item.empty()) {
      *problem = "RGPU_SERVER has an empty entry (expected host:port[,host:port...])";
      return std::nullopt;
    }
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > protocol::kMaxServers) {
    *problem = "RGPU_SERVER lists " + std::to_string(out.size()) + " servers; at most " +
               std::to_string(protocol::kMaxServers) + " are supported";
    return std::nullopt;
  }
  return out;
}

}  // namespace rgpu::shim::route
