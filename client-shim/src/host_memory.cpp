// HostMemory: page-locked host ranges registered with the transport.
#include "host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include "rgpu/common/log.h"

namespace rgpu::shim {
namespace {

size_t page_size() {
  const long n = sysconf(_SC_PAGESIZE);
  return n > 0 ? static_cast<size_t>(n) : 4096;
}

}  // namespace

HostMemory::~HostMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [start, range] : ranges_) {
    if (range.registered) connection_->unregister_memory(reinterpret_cast<void*>(start));
    // Allocations stay mapped: the program may still use them after the
    // library is torn down at exit.
  }
  ranges_.clear();
}

bool HostMemory::register_range(void* ptr, size_t size) {
  Status s = connection_->register_memory(ptr, size);
  if (!s.is_ok()) {
    RGPU_DEBUG("host memory not registered bytes=%zu reason=\"%s\"", size, s.message().c_str());
    return false;
  }
  return true;
}

bool HostMemory::overlaps_locked(uintptr_t start, size_t size) const {
  auto next = ranges_.lower_bound(start);
  if (next != ranges_.end() && next->first < start + size) return true;
  if (next == ranges_.begin()) return false;
  auto prev = std::prev(next);
  return prev->first + prev->second.size > start;
}

CUresult HostMemory::allocate(size_t size, unsigned flags, void** out) {
  constexpr unsigned kKnown = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (out == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t page = page_size();
  if (size > SIZE_MAX - page) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t mapped = (size + page - 1) / page * page;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const bool registered = register_range(p, mapped);
  std::lock_guard<std::mutex> lock(mu_);
  ranges_[reinterpret_cast<uintptr_t>(p)] = Range{size, mapped, flags, registered};
  *out = p;
  return CUDA_SUCCESS;
}

CUresult HostMemory::free(void* ptr) {
  Range range;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranges_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == ranges_.end() || it->second.mapped == 0) return CUDA_ERROR_INVALID_VALUE;
    range = it->second;
    ranges_.erase(it);
  }
  if (range.registered) connection_->unregister_memory(ptr);
  munmap(ptr, range.mapped);
  return CUDA_SUCCESS;
}

CUresult HostMemory::add(void* ptr, size_t size, unsigned flags) {
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (ptr == nullptr || size == 0 || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  if (start + size < start) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (overlaps_locked(start, size)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    // Reserve the range before registering outside the lock.
    ranges_[start] = Range{size, 0, flags, false};
  }
  const bool registered = register_range(ptr, size);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranges_.find(start);
  if (it != ranges_.end() && it->second.mapped == 0) {
    it->second.registered = registered;
  } else if (registered) {
    connection_->unregister_memory(ptr);  // removed meanwhile by another thread
  }
  return CUDA_SUCCESS;
}

CUresult HostMemory::remove(void* ptr) {
  Range range;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranges_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == ranges_.end() || it->second.mapped != 0) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    range = it->second;
    ranges_.erase(it);
  }
  if (range.registered) connection_->unregister_memory(ptr);
  return CUDA_SUCCESS;
}

bool HostMemory::find(const void* ptr, unsigned* flags, bool* allocated) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranges_.upper_bound(p);
  if (it == ranges_.begin()) return false;
  --it;
  if (p >= it->first + it->second.size) return false;
  if (flags) *flags = it->second.flags;
  if (allocated) *allocated = it->second.mapped != 0;
  return true;
}

}  // namespace rgpu::shim
