// Reusable host buffers for the bytes of copies, registered with the
// transport once so that bulk transfers into and out of them go zero-copy.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "rgpu/transport/transport.h"

namespace rgpu::server {

// A pool of page-aligned host buffers in power-of-two size classes, each
// registered with the connection's transport when first made, kept for reuse
// up to a byte limit, and unregistered when dropped. Reuse saves the
// allocation, page faults and registration of every copy. Thread-safe; a
// buffer may outlive the pool object (it then frees itself when released).
class StagingPool {
 public:
  // One buffer; released to the pool on destruction. Movable, like a
  // unique_ptr<std::byte[]>.
  class Buffer {
   public:
    Buffer() = default;
    Buffer(Buffer&& other) noexcept { *this = std::move(other); }
    Buffer& operator=(Buffer&& other) noexcept;
    ~Buffer() { reset(); }
    std::byte* get() const { return data_; }
    size_t capacity() const { return capacity_; }
    explicit operator bool() const { return data_ != nullptr; }
    void reset();

   private:
    friend class StagingPool;
    struct Shared;
    std::shared_ptr<Shared> pool_;
    std::byte* data_ = nullptr;
    size_t capacity_ = 0;
  };

  // `connection` registers the buffers; `max_cached` bounds the bytes kept
  // idle for reuse, `max_in_use` the bytes handed out at once (a session's
  // copies in flight: what one client can make the server hold).
  StagingPool(std::shared_ptr<transport::Connection> connection, size_t max_cached, size_t max_in_use = SIZE_MAX);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A buffer of at least `size` bytes (size > 0), or an empty one when
  // memory is exhausted or max_in_use would be exceeded.
  Buffer acquire(size_t size);

  // Back-pressure: whether a buffer of `size` bytes could ever be had (its
  // size class is within max_in_use), the count of buffers released so far,
  // and a wait until that count passes `seen` or `until` comes (false then).
  // Read releases() before the acquire() that failed, so that a release in
  // between is not missed.
  bool could_fit(size_t size) const;
  size_t max_in_use() const;
  uint64_t releases() const;
  bool wait_release(uint64_t seen, std::chrono::steady_clock::time_point until) const;

  // Counters for tests and logs.
  size_t buffers_made() const;
  size_t bytes_cached() const;
  size_t bytes_in_use() const;

 private:
  std::shared_ptr<Buffer::Shared> shared_;
};

}  // namespace rgpu::server
