// DeviceMemory's virtual memory management: reservations in the virtual
// area, physical chunks counted against the capacity, mappings and access.
#include <sys/mman.h>
#include <unistd.h>

#include "rgpu/common/log.h"
#include "rgpu/cpudev/memory.h"

namespace rgpu::cpudev {

namespace {

uint64_t page() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

}  // namespace

Result<uint64_t> DeviceMemory::reserve(uint64_t size, uint64_t align, uint64_t hint) {
  if (align == 0) align = page();
  if (size == 0 || size % page() != 0 || (align & (align - 1)) != 0 || align % page() != 0) {
    return invalid_argument("reservation size or alignment");
  }
  std::unique_lock lock(mu_);
  auto take = [&](std::map<uint64_t, uint64_t>::iterator it, uint64_t at) {
    uint64_t start = it->first, len = it->second;
    virtual_free_.erase(it);
    if (at > start) virtual_free_[start] = at - start;
    if (start + len > at + size) virtual_free_[at + size] = start + len - (at + size);
    reservations_[at] = Reservation{size, 0};
    return at;
  };
  if (hint && hint % align == 0) {
    auto it = virtual_free_.upper_bound(hint);
    if (it != virtual_free_.begin()) {
      --it;
      if (hint - it->first < it->second && it->second - (hint - it->first) >= size) return take(it, hint);
    }
  }
  for (auto it = virtual_free_.begin(); it != virtual_free_.end(); ++it) {
    uint64_t at = (it->first + align - 1) & ~(align - 1);
    if (at - it->first < it->second && it->second - (at - it->first) >= size) return take(it, at);
  }
  return overloaded("no room in the virtual address area");
}

Status DeviceMemory::unreserve(uint64_t addr, uint64_t size) {
  std::unique_lock lock(mu_);
  auto it = reservations_.find(addr);
  if (it == reservations_.end() || it->second.size != size) return invalid_argument("not a reservation");
  auto m = mappings_.lower_bound(addr);
  if (m != mappings_.end() && m->first < addr + size) return invalid_argument("reservation still mapped");
  reservations_.erase(it);
  uint64_t start = addr, len = size;
  auto next = virtual_free_.lower_bound(start);
  if (next != virtual_free_.end() && start + len == next->first) {
    len += next->second;
    next = virtual_free_.erase(next);
  }
  if (next != virtual_free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += len;
      return Status::ok();
    }
  }
  virtual_free_[start] = len;
  return Status::ok();
}

Result<uint64_t> DeviceMemory::create_physical(uint64_t size, uint64_t owner, uint64_t group) {
  if (size == 0 || size % page() != 0) return invalid_argument("chunk size");
  if (group == kAnyGroup) return invalid_argument("not an isolation group");
  std::unique_lock lock(mu_);
  if (pins_.load() == 0) reclaim_locked();
  if (size > capacity_ - used_) return overloaded("out of device memory");
  used_ += size;
  uint64_t handle = next_id_.fetch_add(1);
  physical_[handle] = Physical{size, owner, group, 1, 0};
  return handle;
}

void DeviceMemory::free_physical_locked(std::map<uint64_t, Physical>::iterator it) {
  used_ -= it->second.size;
  physical_.erase(it);
}

Status DeviceMemory::release_physical(uint64_t handle) {
  std::unique_lock lock(mu_);
  auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.refs == 0) return invalid_argument("not a live chunk");
  if (--it->second.refs == 0 && it->second.mapped_at == 0) free_physical_locked(it);
  return Status::ok();
}

std::optional<uint64_t> DeviceMemory::physical_size(uint64_t handle) const {
  std::shared_lock lock(mu_);
  auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.refs == 0) return std::nullopt;
  return it->second.size;
}

Status DeviceMemory::map(uint64_t addr, uint64_t size, uint64_t handle) {
  std::unique_lock lock(mu_);
  auto p = physical_.find(handle);
  if (p == physical_.end() || p->second.refs == 0) return invalid_argument("not a live chunk");
  if (p->second.mapped_at) return unimplemented("a chunk maps at one address at a time");
  if (size != p->second.size) return invalid_argument("a mapping covers its whole chunk");
  auto r = reservations_.upper_bound(addr);
  if (r == reservations_.begin()) return invalid_argument("not in a reservation");
  --r;
  if (addr - r->first >= r->second.size || size > r->second.size - (addr - r->first)) {
    return invalid_argument("not in a reservation");
  }
  auto m = mappings_.lower_bound(addr);
  if (m != mappings_.end() && m->first < addr + size) return invalid_argument("already mapped");
  if (m != mappings_.begin()) {
    auto prev = std::prev(m);
    if (prev->first + prev->second.size > addr) return invalid_argument("already mapped");
  }
  // Pages of an earlier mapping here may still wait for reclamation.
  if (pins_.load() == 0) reclaim_locked();
  for (const Allocation& a : pending_) {
    if (a.base < addr + size && addr < a.base + a.mapped) return overloaded("range still in use by a kernel");
  }
  if (mprotect(reinterpret_cast<void*>(addr), size, PROT_READ | PROT_WRITE) != 0) {
    RGPU_ERROR("cpudev map mprotect failed addr=0x%llx bytes=%llu", static_cast<unsigned long long>(addr),
               static_cast<unsigned long long>(size));
    return overloaded("cannot map device memory");
  }
  mappings_[addr] = Mapping{size, handle, p->second.group, false};
  p->second.mapped_at = addr;
  return Status::ok();
}

Status DeviceMemory::unmap_locked(uint64_t addr, uint64_t size) {
  auto first = mappings_.lower_bound(addr);
  if (first != mappings_.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size > addr) return invalid_argument("unmap splits a mapping");
  }
  auto last = first;
  while (last != mappings_.end() && last->first < addr + size) {
    if (last->first + last->second.size > addr + size) return invalid_argument("unmap splits a mapping");
    ++last;
  }
  if (first == last) return invalid_argument("nothing mapped");
  for (auto it = first; it != last;) {
    pending_.push_back(Allocation{it->first, it->second.size, it->second.size, 0, it->second.group, 0});
    auto p = physical_.find(it->second.handle);
    if (p != physical_.end()) {
      p->second.mapped_at = 0;
      if (p->second.refs == 0) free_physical_locked(p);
    }
    it = mappings_.erase(it);
  }
  releases_.fetch_add(1, std::memory_order_release);
  if (pins_.load() == 0) reclaim_locked();
  return Status::ok();
}

Status DeviceMemory::unmap(uint64_t addr, uint64_t size) {
  std::unique_lock lock(mu_);
  return unmap_locked(addr, size);
}

Status DeviceMemory::set_access(uint64_t addr, uint64_t size, bool access) {
  std::unique_lock lock(mu_);
  auto it = mappings_.lower_bound(addr);
  if (it == mappings_.end() || it->first != addr) return invalid_argument("not the start of a mapping");
  uint64_t end = addr;
  for (; it != mappings_.end() && it->first == end && end < addr + size; ++it) {
    it->second.access = access;
    end += it->second.size;
  }
  if (end < addr + size) return invalid_argument("range not wholly mapped");
  releases_.fetch_add(1, std::memory_order_release);  // cached checks may have changed
  return Status::ok();
}

std::optional<bool> DeviceMemory::access(uint64_t addr) const {
  std::shared_lock lock(mu_);
  auto it = mappings_.upper_bound(addr);
  if (it == mappings_.begin()) return std::nullopt;
  --it;
  if (addr - it->first >= it->second.size) return std::nullopt;
  return it->second.access;
}

std::optional<uint64_t> DeviceMemory::retain_mapped(uint64_t addr) {
  std::unique_lock lock(mu_);
  auto it = mappings_.upper_bound(addr);
  if (it == mappings_.begin()) return std::nullopt;
  --it;
  if (addr - it->first >= it->second.size) return std::nullopt;
  auto p = physical_.find(it->second.handle);
  if (p == physical_.end()) return std::nullopt;
  ++p->second.refs;
  return it->second.handle;
}

void DeviceMemory::release_virtual_owner(uint64_t owner) {
  std::unique_lock lock(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> drop;
  for (auto& [addr, m] : mappings_) {
    auto p = physical_.find(m.handle);
    if (p != physical_.end() && p->second.owner == owner) drop.emplace_back(addr, m.size);
  }
  for (auto& [addr, size] : drop) (void)unmap_locked(addr, size);
  for (auto it = physical_.begin(); it != physical_.end();) {
    if (it->second.owner == owner && it->second.mapped_at == 0) {
      used_ -= it->second.size;
      it = physical_.erase(it);
    } else {
      ++it;
    }
  }
}

bool DeviceMemory::check_mapped_locked(uint64_t addr, uint64_t size, uint64_t group, uint64_t* lo,
                                       uint64_t* hi) const {
  auto it = mappings_.upper_bound(addr);
  if (it == mappings_.begin()) return false;
  --it;
  if (addr - it->first >= it->second.size) return false;
  uint64_t g = it->second.group;
  if (group != kAnyGroup && g != group) return false;
  // Walk back and forth over adjacent accessible mappings of the group.
  auto first = it;
  while (first != mappings_.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size != first->first || !prev->second.access || prev->second.group != g) break;
    first = prev;
  }
  if (!it->second.access) return false;
  uint64_t end = it->first + it->second.size;
  for (auto next = std::next(it); next != mappings_.end() && next->first == end && next->second.access &&
                                  next->second.group == g;
       ++next) {
    end = next->first + next->second.size;
  }
  *lo = first->first;
  *hi = end;
  if (size == 0) return true;
  return size <= end - addr;
}

}  // namespace rgpu::cpudev
