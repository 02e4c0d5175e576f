// Device memory of one CPU device: a reserved virtual address range, the
// allocations carved from it, and the range checks every access goes through.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::cpudev {

// The isolation group that check(), find() and release() accept for "any
// group": no caller may put an allocation in it.
constexpr uint64_t kAnyGroup = ~0ull;

// One live allocation. `size` is what was asked for; `mapped` is the page
// rounded size that counts against the device's memory.
struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t mapped = 0;
  uint64_t owner = 0;  // opaque tag of the allocating context
  uint64_t group = 0;  // isolation group of the allocating context
  uint64_t id = 0;     // process-wide unique, never reused
};

// The memory of one device. One address range of `capacity` bytes is reserved
// at creation (PROT_NONE, MAP_NORESERVE); allocations are page aligned and are
// made accessible when allocated. A freed allocation leaves the table at once
// (so every later check fails), but its pages are returned to the system
// (MADV_DONTNEED + PROT_NONE) and reused only when no Pin is alive, so code
// that checked a range while pinned never touches an unmapped page.
//
// Beside it, an address area of kVirtualFactor times the capacity serves
// virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap);
// address space only, as allocators such as PyTorch's expandable segments
// reserve more than the device holds, once per pool:
// physical chunks count against the capacity when created, and a mapped,
// accessible range is checked like an allocation, adjacent mappings of one
// group forming one range (an access may span the chunks of a segment).
//
// Lifetime: owned by its device; outlives every Pin taken from it.
// Thread safety: every method is safe to call concurrently.
class DeviceMemory {
 public:
  // While a Pin is alive, pages of allocations that were live when it was
  // taken stay mapped, even if they are freed meanwhile. Hold one across a
  // check() and the accesses it validated. Cheap (one atomic add). Movable.
  class Pin {
   public:
    Pin() = default;
    explicit Pin(const DeviceMemory* memory);
    Pin(Pin&& other) noexcept;
    Pin& operator=(Pin&& other) noexcept;
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin();

   private:
    void reset();
    const DeviceMemory* memory_ = nullptr;
  };

  // Reserves `capacity` bytes of address space (rounded up to pages).
  static Result<std::unique_ptr<DeviceMemory>> create(uint64_t capacity);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Allocates `size` (> 0) bytes, zero filled, page aligned, in isolation
  // group `group`. kOverloaded when the device has no room, kInvalidArgument
  // for size 0 or group kAnyGroup.
  Result<uint64_t> allocate(uint64_t size, uint64_t owner, uint64_t group = 0);
  // Frees the allocation whose base is `base`. kInvalidArgument when `base` is
  // not the base of a live allocation (double free, interior pointer, ...) of
  // `group` (any group for kAnyGroup).
  Status release(uint64_t base, uint64_t group = kAnyGroup);
  // Frees every allocation of `owner`; returns how many there were.
  size_t release_owner(uint64_t owner);

  // True when [addr, addr + size) lies entirely inside one live allocation
  // of `group` (of any group for kAnyGroup). size 0 asks whether addr is
  // inside one. Never faults, whatever the input.
  bool check(uint64_t addr, uint64_t size, uint64_t group = kAnyGroup) const;

  // The last few allocations check() found, for one thread (a kernel
  // usually works on a handful of buffers). A hit answers without the lock;
  // any release on the memory invalidates every cache, so the answer is
  // exactly check()'s. A value type, one per thread.
  struct CheckCache {
    static constexpr int kEntries = 4;
    const DeviceMemory* memory = nullptr;
    uint64_t releases = 0;
    uint64_t group = 0;
    uint64_t lo[kEntries] = {}, hi[kEntries] = {};  // [base, base + size) of allocations
    int next = 0;                                   // the entry to replace next
  };
  // check(), answered from and recorded in `cache` when possible.
  bool check(uint64_t addr, uint64_t size, uint64_t group, CheckCache* cache) const;
  // check(), and on true the allocation (or run of mappings) around the
  // access as [*lo, *hi), and the release count read before the lookup:
  // the answer holds for that whole range while releases() still reads
  // *seen (compiled kernels cache it per instruction).
  bool check_extent(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo, uint64_t* hi, uint64_t* seen) const;
  const std::atomic<uint64_t>& releases() const { return releases_; }
  // The live allocation containing addr, if any.
  std::optional<Allocation> find(uint64_t addr) const;
  // True when addr lies in this device's reserved range (live or not),
  // virtual area included.
  bool in_range(uint64_t addr) const { return addr >= base_ && addr - base_ < capacity_ + virtual_size_; }

  // ---- virtual memory management (memory_vmm.cpp) ----
  static constexpr uint64_t kVirtualFactor = 64;
  // Reserves `size` bytes (a multiple of `align`, itself a power of two
  // multiple of the page; 0: the page) of the virtual area, at `hint` when
  // that range is free. kOverloaded when no room.
  Result<uint64_t> reserve(uint64_t size, uint64_t align, uint64_t hint);
  // Frees a reservation, given exactly; kInvalidArgument when it is not one
  // or still has mappings.
  Status unreserve(uint64_t addr, uint64_t size);
  // A physical chunk of `size` bytes (page multiple), counted against the
  // capacity; returns its handle (never 0, never reused). Reference 1.
  Result<uint64_t> create_physical(uint64_t size, uint64_t owner, uint64_t group);
  // Drops a reference (cuMemRelease); the chunk is freed when none is left
  // and it is not mapped.
  Status release_physical(uint64_t handle);
  // The size of a live chunk; nullopt when not one of this memory's.
  std::optional<uint64_t> physical_size(uint64_t handle) const;
  // Maps all of chunk `handle` at `addr` (inside one reservation, not
  // mapped yet; `size` must be the chunk's size; a chunk maps once).
  Status map(uint64_t addr, uint64_t size, uint64_t handle);
  // Unmaps the mappings [addr, addr + size) covers, which must be whole.
  Status unmap(uint64_t addr, uint64_t size);
  // Makes the mappings in [addr, addr + size) accessible or not.
  Status set_access(uint64_t addr, uint64_t size, bool access);
  // Whether the mapping holding addr is accessible; nullopt when unmapped.
  std::optional<bool> access(uint64_t addr) const;
  // The chunk mapped at addr, with one more reference (cuMemRetainAllocationHandle).
  std::optional<uint64_t> retain_mapped(uint64_t addr);
  // Drops every chunk, mapping and reservation of `owner`.
  void release_virtual_owner(uint64_t owner);

  Pin pin() const { return Pin(this); }

  uint64_t base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  // Bytes not taken by live or not yet reclaimed allocations.
  uint64_t free_bytes() const;
  size_t live_count() const;

 private:
  DeviceMemory(uint64_t base, uint64_t capacity, uint64_t virtual_size);
  // Returns pending frees to the free list; requires mu_ held exclusively.
  void reclaim_locked() const;
  void unpin() const;

  struct Mapping {
    uint64_t size = 0;
    uint64_t handle = 0;
    uint64_t group = 0;
    bool access = false;
  };
  struct Physical {
    uint64_t size = 0;
    uint64_t owner = 0;
    uint64_t group = 0;
    uint64_t refs = 1;
    uint64_t mapped_at = 0;  // 0: not mapped
  };
  struct Reservation {
    uint64_t size = 0;
    uint64_t owner = 0;
  };
  // The accessible mapped range holding [addr, addr + size), joined across
  // adjacent mappings of one group; requires mu_ held.
  bool check_mapped_locked(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo, uint64_t* hi) const;
  // The range of the live allocation or mappings holding the access.
  bool extent_locked(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo, uint64_t* hi) const;
  void free_physical_locked(std::map<uint64_t, Physical>::iterator it);
  Status unmap_locked(uint64_t addr, uint64_t size);

  const uint64_t base_;
  const uint64_t capacity_;
  const uint64_t virtual_size_;
  std::map<uint64_t, uint64_t> virtual_free_;     // address -> length
  std::map<uint64_t, Reservation> reservations_;  // by address
  std::map<uint64_t, Mapping> mappings_;          // by address
  std::map<uint64_t, Physical> physical_;         // by handle
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Allocation> live_;                // by base
  mutable std::map<uint64_t, uint64_t> free_;          // offset -> length
  mutable std::vector<Allocation> pending_;            // freed, still mapped
  mutable uint64_t used_ = 0;                          // live + pending mapped bytes
  mutable std::atomic<uint64_t> pins_{0};
  std::atomic<uint64_t> releases_{0};  // bumped by every release, under mu_
  static std::atomic<uint64_t> next_id_;
};

}  // namespace rgpu::cpudev
