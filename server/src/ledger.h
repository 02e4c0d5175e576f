// A session's ledger of device memory: its allocations, each with the
// context that owns it, the module globals it was told about, and the bytes
// held on each device against the session's quota.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace rgpu::server {

// Every pointer a client names is checked here against the allocations of
// the call's own context: a pointer of another context of the same session
// is as foreign as another session's. Device addresses are unique across the
// contexts of a process, so one ordered map finds the range holding a pointer.
// Module images count against the quota too (charge_module).
// The quota is per device (the session's own ordinals, so per slice):
// allocations of all the session's contexts on one device count together;
// a module counts its image and the memory its globals took at load
// (grow_module), not each global a client asks for.
// Thread-safety: none, but held_on(); the session uses it only under its execution lock.
class Ledger {
 public:
  struct Range {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t ctx = 0;     // the client context handle that owns it
    uint64_t module = 0;  // a module global's module handle (0: an allocation)
  };

  // `quotas[d]`: the bytes of allocations the session may hold on its
  // device d (0, or a device past the list: no limit).
  explicit Ledger(std::vector<uint64_t> quotas = {})
      : quotas_(std::move(quotas)), published_(quotas_.size()) {}

  // Says which device context `ctx` lives on; allocations of a context never
  // bound count on device 0.
  void bind_context(uint64_t ctx, uint32_t device) { devices_[ctx] = device; }
  // Whether an allocation of `size` more bytes in `ctx` stays within the
  // quota of its device: in use + size <= quota. The one place the quota is
  // decided; every allocation path asks it before it allocates.
  bool fits(uint64_t ctx, uint64_t size) const;
  // Counts a module image of `bytes`, loaded as `module` in `ctx`, against
  // the quota of its device until drop_module(): false (nothing counted)
  // when it does not fit or the module is counted already.
  bool charge_module(uint64_t ctx, uint64_t module, uint64_t bytes);
  // Adds `bytes` (the device memory its globals took at load) to a module
  // already charged: false (nothing added) when they do not fit or the
  // module is not charged.
  bool grow_module(uint64_t module, uint64_t bytes);
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
  // Bytes the session holds against its quotas (allocations and module
  // images, not module globals), in all and on the device of `ctx`.
  uint64_t bytes_held() const { return bytes_held_; }
  uint64_t bytes_held_by(uint64_t ctx) const;
  uint64_t quota(uint32_t device) const { return device < quotas_.size() ? quotas_[device] : 0; }
  uint32_t device_of(uint64_t ctx) const;
  // bytes_held_by() of device `device` (one of the quotas' devices; 0 past
  // them), readable from any thread, for metrics.
  uint64_t held_on(uint32_t device) const {
    return device < published_.size() ? published_[device].load(std::memory_order_relaxed) : 0;
  }
  // Drops every range of a context (and its binding), or every global of a
  // module and its image's charge.
  void drop_context(uint64_t ctx);
  void drop_module(uint64_t module);
  void clear();

 private:
  void count(uint64_t ctx, uint64_t size, bool add);

  const std::vector<uint64_t> quotas_;
  std::map<uint64_t, Range> ranges_;  // by base
  std::unordered_map<uint64_t, uint32_t> devices_;  // context -> device
  std::unordered_map<uint32_t, uint64_t> held_;     // device -> bytes of allocations and images
  struct Charge {
    uint64_t ctx;
    uint64_t bytes;
  };
  std::unordered_map<uint64_t, Charge> images_;  // module -> its image's charge
  uint64_t bytes_held_ = 0;
  // held_ of each of the quotas' devices, published for other threads.
  std::vector<std::atomic<uint64_t>> published_;
};

}  // namespace rgpu::server
