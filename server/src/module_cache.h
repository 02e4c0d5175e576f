// The server's module cache: images by content hash, shared by all sessions,
// so each image crosses the wire once per server, and, with a cache folder,
// once per folder across server restarts.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::server {

struct ModuleCacheOptions {
  // Folder that keeps every image as a file named by its SHA-256 (hex);
  // empty: memory only.
  std::string dir;
  // Bytes of images kept in memory; the least recently used go first (their
  // files stay on disk).
  uint64_t memory_limit = uint64_t{1} << 30;
};

// Thread-safe. Images are immutable once stored; the returned pointers stay
// valid after eviction. An image is stored with one NUL byte after it (PTX
// text must end in one): Image->size() - 1 is the image's own size.
class ModuleCache {
 public:
  using Image = std::shared_ptr<const std::vector<std::byte>>;

  explicit ModuleCache(ModuleCacheOptions options = {});
  // Checks that the folder exists (creating it, 0700) and is writable.
  static Result<std::shared_ptr<ModuleCache>> open(ModuleCacheOptions options);

  // The image for `hash` (64 lower-case hex digits), from memory or disk, or
  // null. A file whose content does not match its name is deleted and missed.
  Image find(const std::string& hash);
  // Stores `image` (verified to match `hash`; ending in the NUL byte).
  Image insert(const std::string& hash, std::vector<std::byte> image);

  struct Stats {
    uint64_t hits = 0;          // from memory or disk
    uint64_t disk_hits = 0;     // of which read back from the folder
    uint64_t misses = 0;
    uint64_t images = 0;        // stored (received) images
    uint64_t bytes_received = 0;  // image bytes that crossed the wire
    uint64_t evictions = 0;     // dropped from memory for the limit
    uint64_t corrupt_files = 0;  // deleted for not matching their name
  };
  Stats stats() const;

 private:
  struct Entry {
    Image image;
    std::list<std::string>::iterator lru;  // position in lru_ (front: newest)
  };
  Image remember_locked(const std::string& hash, Image image);
  Image load_file(const std::string& hash);
  void write_file(const std::string& hash, const std::vector<std::byte>& image);

  const ModuleCacheOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> images_;
  std::list<std::string> lru_;
  uint64_t memory_bytes_ = 0;
  Stats stats_;
};

}  // namespace rgpu::server
