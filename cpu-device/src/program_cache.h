// Parsed PTX programs shared by every context and session of the CPU device,
// named by the SHA-256 of the module image they came from, so that a module
// loaded again (another client of the same rgpud, the same program run
// again) is neither decompressed nor parsed again, and its kernels stay
// decoded.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "rgpu/fatbin/fatbin.h"
#include "rgpu/ptx/ptx.h"

namespace rgpu::cpudev {

// Keeps the most recently used programs up to a budget of PTX text bytes
// (a program also holds what its used kernels decoded to). A program stays
// alive while a module uses it, cached or not. Thread-safe.
class ProgramCache {
 public:
  explicit ProgramCache(uint64_t byte_limit) : limit_(byte_limit) {}

  // Makes the program and says how many bytes of PTX text it holds.
  using Make = std::function<Result<std::shared_ptr<const ptx::Program>>(uint64_t* text_bytes)>;
  // The program cached under `key`, else make()'s, which is then kept.
  // make() runs without the lock held; two loads of one new image may both
  // parse it, and the second result is dropped.
  Result<std::shared_ptr<const ptx::Program>> get(const fatbin::ContentHash& key, const Make& make);

  struct Stats {
    uint64_t hits = 0, misses = 0, programs = 0, bytes = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const ptx::Program> program;
    uint64_t bytes = 0;
    std::list<fatbin::ContentHash>::iterator lru;  // front: newest
  };
  const uint64_t limit_;
  mutable std::mutex mu_;
  std::unordered_map<fatbin::ContentHash, Entry, fatbin::ContentHashHasher> entries_;
  std::list<fatbin::ContentHash> lru_;
  Stats stats_;
};

}  // namespace rgpu::cpudev
