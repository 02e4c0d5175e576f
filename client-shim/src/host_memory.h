// Page-locked host memory of the program: allocations (cuMemHostAlloc) and
// registrations (cuMemHostRegister), registered once with the transport so
// that copies from and to them go zero-copy.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "rgpu/transport/transport.h"

namespace rgpu::shim {

// The program's page-locked ranges. The device is on another host, so
// "page-locked" means what matters for remote copies: the range is registered
// with the transport (pinned and RDMA-registered where the transport is RDMA),
// once, instead of on every copy. Thread-safe; owned by the Client, which
// keeps the connection alive for as long as this object lives.
class HostMemory {
 public:
  explicit HostMemory(std::shared_ptr<transport::Connection> connection)
      : connection_(std::move(connection)) {}
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  // cuMemHostAlloc: page-aligned memory, registered. CU_MEMHOSTALLOC_* flags.
  CUresult allocate(size_t size, unsigned flags, void** out);
  // cuMemFreeHost: `ptr` must be the start of an allocate() range.
  CUresult free(void* ptr);
  // cuMemHostRegister: the program's own memory. CU_MEMHOSTREGISTER_* flags.
  CUresult add(void* ptr, size_t size, unsigned flags);
  // cuMemHostUnregister: `ptr` must be the start of an add() range.
  CUresult remove(void* ptr);
  // The range holding `ptr`: its flags and whether it came from allocate().
  bool find(const void* ptr, unsigned* flags, bool* allocated) const;

 private:
  struct Range {
    size_t size;
    size_t mapped;  // bytes mapped by allocate(); 0 for add()
    unsigned flags;
    bool registered;  // with the transport
  };
  // Registers [ptr, ptr + size) with the transport; a transport that cannot
  // register only costs the zero-copy path, not the allocation.
  bool register_range(void* ptr, size_t size);
  bool overlaps_locked(uintptr_t start, size_t size) const;

  const std::shared_ptr<transport::Connection> connection_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Range> ranges_;  // by start address
};

}  // namespace rgpu::shim
