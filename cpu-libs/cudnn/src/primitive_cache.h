// oneDNN primitives kept for reuse: creating one (its primitive descriptor's
// search through the implementations, its kernel's generation) costs far
// more than running it on the small tensors of a training step, and a step
// asks for the same few again and again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace rgpu::cpudnn {

// Everything a primitive is created from, as bytes: callers append the op's
// tag and every value they pass to oneDNN (dims, strides, paddings, flags,
// epsilon), so two keys are equal exactly when the primitives would be.
class PrimitiveKey {
 public:
  explicit PrimitiveKey(const char* op) { bytes_.append(op).push_back('\0'); }
  PrimitiveKey& add(int64_t v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  PrimitiveKey& add(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return add(int64_t(bits));
  }
  PrimitiveKey& add(const dnnl::memory::dims& d) {
    add(int64_t(d.size()));
    for (int64_t v : d) add(v);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// A primitive and the scratchpad its executions need. Made with
// scratchpad_mode::user (user_scratchpad()): oneDNN's library-managed
// scratchpad belongs to the thread that created the primitive, and a kept
// one runs on whichever host-function thread runs the job, perhaps on two
// at once; so each execution brings a scratchpad of its own.
struct Primitive {
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad;

  template <class P, class PD>
  static Primitive of(const PD& pd) {
    return {P(pd), pd.scratchpad_desc()};
  }
  // Executes on `stream` with `args` plus a fresh scratchpad.
  void execute(const dnnl::engine& engine, dnnl::stream& stream, std::unordered_map<int, dnnl::memory> args) const;
};

// The attributes every kept primitive is made with.
dnnl::primitive_attr user_scratchpad();

// A bounded LRU of primitives. One per cuDNN handle rather than per
// process: no state shared between the handles (and so the sessions) of
// rgpud, freed with the handle, and a handle is what PyTorch keeps for the
// life of a process, so it warms once. (oneDNN's own process-wide cache
// still shares generated kernels between handles.) Thread safety: every
// member may be called concurrently (a handle's jobs may run on several
// streams at once); the primitives returned may be executed concurrently,
// as oneDNN allows, with its library-managed scratchpad.
class PrimitiveCache {
 public:
  // A small CNN's step needs about ten (three convolution directions per
  // layer, batch norm's two); 256 holds the shapes of a large network with
  // room for a few input sizes, at a few KiB each plus the kernels oneDNN
  // shares.
  static constexpr size_t kCapacity = 256;

  explicit PrimitiveCache(size_t capacity = kCapacity) : capacity_(capacity) {}
  PrimitiveCache(const PrimitiveCache&) = delete;
  PrimitiveCache& operator=(const PrimitiveCache&) = delete;

  // The primitive stored under `key`, else `make()`'s, stored (the least
  // recently used one dropped beyond the capacity). `make` runs without the
  // lock held; when two callers miss at once both make one and the first
  // stored is kept.
  Primitive get(const PrimitiveKey& key, const std::function<Primitive()>& make);

  struct Stats {
    uint64_t hits = 0, misses = 0;
    size_t size = 0;
  };
  Stats stats() const;

 private:
  using Lru = std::list<std::pair<std::string, Primitive>>;  // most recent first
  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

// `make()` through `cache`, or straight `make()` when there is none
// (RGPU_DNN_CACHE=0).
inline Primitive obtain(PrimitiveCache* cache, const PrimitiveKey& key, const std::function<Primitive()>& make) {
  return cache ? cache->get(key, make) : make();
}

}  // namespace rgpu::cpudnn
