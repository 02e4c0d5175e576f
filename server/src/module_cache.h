// The server's module cache: images by content hash, shared by all sessions,
// so each image crosses the wire once per server.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rgpu::server {

// Thread-safe. Images are immutable once stored; the returned pointers stay
// valid after eviction.
class ModuleCache {
 public:
  using Image = std::shared_ptr<const std::vector<std::byte>>;

  // The image for `hash`, or null. Counts a hit or a miss.
  Image find(const std::string& hash);
  // Stores `image` (already verified to match `hash`).
  Image insert(const std::string& hash, std::vector<std::byte> image);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t images = 0;
    uint64_t bytes_received = 0;  // image bytes that crossed the wire
  };
  Stats stats() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Image> images_;
  Stats stats_;
};

}  // namespace rgpu::server
