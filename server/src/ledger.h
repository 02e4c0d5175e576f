// A session's ledger of device memory: its allocations, each with the
// context that owns it, and the module globals it was told about.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace rgpu::server {

// Every pointer a client names is checked here against the allocations of
// the call's own context: a pointer of another context of the same session
// is as foreign as another session's. Device addresses are unique across the
// contexts of a process, so one ordered map finds the range holding a pointer.
// Thread-safety: none; the session uses it only under its execution lock.
class Ledger {
 public:
  struct Range {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t ctx = 0;     // the client context handle that owns it
    uint64_t module = 0;  // a module global's module handle (0: an allocation)
  };

  // Records an allocation of `ctx` (or a global of `module` in `ctx`). False
  // when it is empty or overlaps a range already recorded (a global asked for
  // twice, for one).
  bool add(uint64_t ctx, uint64_t base, uint64_t size, uint64_t module = 0);
  // Forgets the allocation (never a module global) that starts at `base` in
  // `ctx`; false when there is none.
  bool remove_allocation(uint64_t ctx, uint64_t base);
  // Whether [ptr, ptr + size) lies inside one range of `ctx`; size 0 checks ptr.
  bool check(uint64_t ctx, uint64_t ptr, uint64_t size) const;
  // The range holding `ptr`, in any context of the session.
  std::optional<Range> find(uint64_t ptr) const;
  // Bytes of allocations (not module globals) the session holds.
  uint64_t bytes_held() const { return bytes_held_; }
  // Drops every range of a context, or every global of a module.
  void drop_context(uint64_t ctx);
  void drop_module(uint64_t module);
  void clear();

 private:
  std::map<uint64_t, Range> ranges_;  // by base
  uint64_t bytes_held_ = 0;
};

}  // namespace rgpu::server
