// A session's table of client handles: every context, stream, event, module
// and function the client named, with the object behind it, its parent and
// how to release it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "rgpu/protocol/handles.h"

namespace rgpu::server {

// Handles form a tree: a context owns its streams, events and modules, a
// module its functions. Removing a handle releases its subtree children
// first, so no caller writes a cascade by hand. Only handles a client may
// name are accepted: a minted one of the right kind (or a primary context),
// never a special value, a duplicate, or one with a parent it cannot have.
// Thread-safety: none; the session uses it only under its execution lock.
// Destruction does not run destroy functions: call clear() first.
class HandleTable {
 public:
  using Kind = protocol::HandleKind;
  using Destroy = std::function<void(void*)>;

  enum class AddResult { kAdded, kInvalid, kFull };

  explicit HandleTable(size_t limit) : limit_(limit) {}
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  // Registers `handle` of `kind` for `object`, a child of `parent` (0: a
  // root, which only contexts are). kInvalid when the handle is not one a
  // client may name for `kind`, is already live, or `parent` is not a live
  // handle that may own it; kFull at the session's handle limit.
  AddResult add(Kind kind, uint64_t handle, void* object, uint64_t parent, Destroy destroy);
  // The object behind a live handle of `kind`; null otherwise.
  void* find(Kind kind, uint64_t handle) const;
  // The parent of a live handle of `kind` (0 when a root or not live).
  uint64_t parent(Kind kind, uint64_t handle) const;
  // The live children of `parent` of `kind` (parent 0: the roots).
  std::vector<uint64_t> children(uint64_t parent, Kind kind) const;
  // Removes `handle` and its subtree, children first, running each destroy
  // function. False when it is not a live handle of `kind`.
  bool remove(Kind kind, uint64_t handle);
  // Removes everything (roots one by one, as remove does).
  void clear();

  size_t size() const { return entries_.size(); }
  size_t limit() const { return limit_; }

  // Whether a client may name `handle` as a `kind` it creates.
  static bool nameable(Kind kind, uint64_t handle);
  // Whether a `child` kind may hang under a `parent` kind.
  static bool may_own(Kind parent, Kind child);

 private:
  struct Entry {
    Kind kind;
    void* object;
    uint64_t parent;
    Destroy destroy;
    std::vector<uint64_t> children;
  };
  void remove_subtree(uint64_t handle);

  const size_t limit_;
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace rgpu::server
