// DeviceMemory: address range reservation, first-fit allocation, range checks
// and deferred page reclamation.
#include "rgpu/cpudev/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "rgpu/common/log.h"

namespace rgpu::cpudev {

std::atomic<uint64_t> DeviceMemory::next_id_{1};

namespace {

uint64_t page_size() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

// Rounds up to a multiple of `to`; false on overflow.
bool round_up(uint64_t v, uint64_t to, uint64_t* out) {
  uint64_t r = v % to;
  if (r == 0) {
    *out = v;
    return true;
  }
  if (v > UINT64_MAX - (to - r)) return false;
  *out = v + (to - r);
  return true;
}

}  // namespace

DeviceMemory::Pin::Pin(const DeviceMemory* memory) : memory_(memory) {
  if (memory_) memory_->pins_.fetch_add(1);
}

DeviceMemory::Pin::Pin(Pin&& other) noexcept : memory_(other.memory_) { other.memory_ = nullptr; }

DeviceMemory::Pin& DeviceMemory::Pin::operator=(Pin&& other) noexcept {
  if (this != &other) {
    reset();
    memory_ = other.memory_;
    other.memory_ = nullptr;
  }
  return *this;
}

DeviceMemory::Pin::~Pin() { reset(); }

void DeviceMemory::Pin::reset() {
  if (memory_) memory_->unpin();
  memory_ = nullptr;
}

Result<std::unique_ptr<DeviceMemory>> DeviceMemory::create(uint64_t capacity) {
  uint64_t rounded = 0;
  if (capacity == 0 || !round_up(capacity, page_size(), &rounded)) {
    return invalid_argument("device memory capacity must be positive");
  }
  // A smaller virtual area when the address space cannot hold the full one.
  uint64_t virtual_size = 0;
  void* p = MAP_FAILED;
  for (uint64_t factor : {kVirtualFactor, uint64_t{4}, uint64_t{1}}) {
    if (rounded > (UINT64_MAX >> 1) / (factor + 1)) continue;
    virtual_size = rounded * factor;
    p = mmap(nullptr, rounded + virtual_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) break;
  }
  if (p == MAP_FAILED) {
    int err = errno;
    RGPU_ERROR("cpudev reserve failed bytes=%llu errno=%d", static_cast<unsigned long long>(rounded), err);
    return overloaded("cannot reserve " + std::to_string(rounded) + " bytes of address space: " +
                      std::strerror(err));
  }
  return std::unique_ptr<DeviceMemory>(new DeviceMemory(reinterpret_cast<uint64_t>(p), rounded, virtual_size));
}

DeviceMemory::DeviceMemory(uint64_t base, uint64_t capacity, uint64_t virtual_size)
    : base_(base), capacity_(capacity), virtual_size_(virtual_size) {
  free_[0] = capacity;
  virtual_free_[base + capacity] = virtual_size;
}

DeviceMemory::~DeviceMemory() { munmap(reinterpret_cast<void*>(base_), capacity_ + virtual_size_); }

Result<uint64_t> DeviceMemory::allocate(uint64_t size, uint64_t owner, uint64_t group) {
  if (size == 0) return invalid_argument("allocation size is 0");
  if (group == kAnyGroup) return invalid_argument("not an isolation group");
  uint64_t mapped = 0;
  if (!round_up(size, page_size(), &mapped) || mapped > capacity_) {
    return overloaded("allocation larger than the device");
  }
  std::unique_lock lock(mu_);
  if (pins_.load() == 0) reclaim_locked();
  auto it = free_.begin();
  for (; it != free_.end(); ++it) {
    if (it->second >= mapped) break;
  }
  if (it == free_.end()) return overloaded("out of device memory");
  uint64_t offset = it->first;
  uint64_t left = it->second - mapped;
  free_.erase(it);
  if (left) free_[offset + mapped] = left;
  uint64_t addr = base_ + offset;
  if (mprotect(reinterpret_cast<void*>(addr), mapped, PROT_READ | PROT_WRITE) != 0) {
    int err = errno;
    free_[offset] = mapped;  // coalescing is redone on the next release
    RGPU_ERROR("cpudev mprotect failed addr=0x%llx bytes=%llu errno=%d",
               static_cast<unsigned long long>(addr), static_cast<unsigned long long>(mapped), err);
    return overloaded("cannot map device memory");
  }
  Allocation a{addr, size, mapped, owner, group, next_id_.fetch_add(1)};
  live_[addr] = a;
  used_ += mapped;
  return addr;
}

Status DeviceMemory::release(uint64_t base, uint64_t group) {
  std::unique_lock lock(mu_);
  auto it = live_.find(base);
  if (it == live_.end() || (group != kAnyGroup && it->second.group != group)) {
    return invalid_argument("not the base of a live allocation");
  }
  pending_.push_back(it->second);
  live_.erase(it);
  releases_.fetch_add(1, std::memory_order_release);
  if (pins_.load() == 0) reclaim_locked();
  return Status::ok();
}

size_t DeviceMemory::release_owner(uint64_t owner) {
  std::unique_lock lock(mu_);
  size_t n = 0;
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second.owner == owner) {
      pending_.push_back(it->second);
      it = live_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  if (n) releases_.fetch_add(1, std::memory_order_release);
  if (pins_.load() == 0) reclaim_locked();
  return n;
}

void DeviceMemory::reclaim_locked() const {
  for (const Allocation& a : pending_) {
    void* p = reinterpret_cast<void*>(a.base);
    madvise(p, a.mapped, MADV_DONTNEED);
    mprotect(p, a.mapped, PROT_NONE);
    // An unmapped virtual range: its chunk's bytes are counted elsewhere.
    if (a.base - base_ >= capacity_) continue;
    uint64_t offset = a.base - base_;
    uint64_t length = a.mapped;
    // Coalesce with the neighbours in the free list.
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + length == next->first) {
      length += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += length;
        used_ -= a.mapped;
        continue;
      }
    }
    free_[offset] = length;
    used_ -= a.mapped;
  }
  pending_.clear();
}

void DeviceMemory::unpin() const {
  if (pins_.fetch_sub(1) == 1) {
    std::unique_lock lock(mu_);
    if (pins_.load() == 0 && !pending_.empty()) reclaim_locked();
  }
}

bool DeviceMemory::check(uint64_t addr, uint64_t size, uint64_t group) const {
  std::shared_lock lock(mu_);
  uint64_t lo, hi;
  return extent_locked(addr, size, group, &lo, &hi);
}

bool DeviceMemory::extent_locked(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo, uint64_t* hi) const {
  if (addr - base_ >= capacity_) return check_mapped_locked(addr, size, group, lo, hi);
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (group != kAnyGroup && a.group != group) return false;
  uint64_t off = addr - a.base;  // addr >= a.base here
  if (off >= a.size || size > a.size - off) return false;
  *lo = a.base;
  *hi = a.base + a.size;
  return true;
}

bool DeviceMemory::check(uint64_t addr, uint64_t size, uint64_t group, CheckCache* cache) const {
  // Read before the lookup: a release after this read makes the entry stale.
  uint64_t releases = releases_.load(std::memory_order_acquire);
  if (cache->memory == this && cache->releases == releases && cache->group == group) {
    for (int i = 0; i < CheckCache::kEntries; ++i) {
      if (addr >= cache->lo[i] && addr < cache->hi[i] && size <= cache->hi[i] - addr) return true;
    }
  } else {
    *cache = CheckCache{};
    cache->memory = this;
    cache->releases = releases;
    cache->group = group;
  }
  std::shared_lock lock(mu_);
  uint64_t lo = 0, hi = 0;
  if (!extent_locked(addr, size, group, &lo, &hi)) return false;
  cache->lo[cache->next] = lo;
  cache->hi[cache->next] = hi;
  cache->next = (cache->next + 1) % CheckCache::kEntries;
  return true;
}

bool DeviceMemory::check_extent(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo, uint64_t* hi,
                                uint64_t* seen) const {
  *seen = releases_.load(std::memory_order_acquire);  // before the lookup, as in check()
  std::shared_lock lock(mu_);
  return extent_locked(addr, size, group, lo, hi);
}

std::optional<Allocation> DeviceMemory::find(uint64_t addr) const {
  std::shared_lock lock(mu_);
  if (addr - base_ >= capacity_) {
    auto m = mappings_.upper_bound(addr);
    if (m == mappings_.begin()) return std::nullopt;
    --m;
    if (addr - m->first >= m->second.size) return std::nullopt;
    return Allocation{m->first, m->second.size, m->second.size, 0, m->second.group, m->second.handle};
  }
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (addr - it->second.base >= it->second.size) return std::nullopt;
  return it->second;
}

uint64_t DeviceMemory::free_bytes() const {
  std::shared_lock lock(mu_);
  return capacity_ - used_;
}

size_t DeviceMemory::live_count() const {
  std::shared_lock lock(mu_);
  return live_.size();
}

}  // namespace rgpu::cpudev
