// StagingPool: registered host buffers reused across copies.
#include "staging_pool.h"

#include <sys/mman.h>

#include "rgpu/common/log.h"

namespace rgpu::server {
namespace {

// Smallest size class: below it copies travel inside the messages anyway.
constexpr size_t kMinClass = 64 * 1024;

size_t size_class(size_t size) {
  size_t c = kMinClass;
  while (c < size && c <= (SIZE_MAX >> 1)) c <<= 1;
  return c < size ? size : c;
}

}  // namespace

struct StagingPool::Buffer::Shared {
  std::shared_ptr<transport::Connection> connection;
  size_t max_cached = 0;
  size_t max_in_use = SIZE_MAX;
  std::mutex mu;
  std::condition_variable released;  // notified with every release
  uint64_t releases = 0;
  size_t in_use = 0;  // bytes of buffers handed out and not yet released
  std::map<size_t, std::vector<std::byte*>> idle;  // by capacity
  size_t cached = 0;  // bytes in `idle`
  size_t made = 0;
  bool closed = false;  // the pool object is gone: release frees

  std::byte* make(size_t capacity) {
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    Status s = connection->register_memory(p, capacity);
    if (!s.is_ok()) RGPU_DEBUG("staging buffer not registered bytes=%zu reason=\"%s\"", capacity, s.message().c_str());
    std::lock_guard<std::mutex> lock(mu);
    ++made;
    return static_cast<std::byte*>(p);
  }

  void destroy(std::byte* p, size_t capacity) {
    connection->unregister_memory(p);
    munmap(p, capacity);
  }

  void release(std::byte* p, size_t capacity) {
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      in_use -= capacity;
      ++releases;
      if (!closed && cached + capacity <= max_cached) {
        idle[capacity].push_back(p);
        cached += capacity;
        keep = true;
      }
    }
    released.notify_all();
    if (!keep) destroy(p, capacity);
  }
};

StagingPool::Buffer& StagingPool::Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    data_ = other.data_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  return *this;
}

void StagingPool::Buffer::reset() {
  if (data_ != nullptr && pool_) pool_->release(data_, capacity_);
  pool_.reset();
  data_ = nullptr;
  capacity_ = 0;
}

StagingPool::StagingPool(std::shared_ptr<transport::Connection> connection, size_t max_cached, size_t max_in_use)
    : shared_(std::make_shared<Buffer::Shared>()) {
  shared_->connection = std::move(connection);
  shared_->max_cached = max_cached;
  shared_->max_in_use = max_in_use;
}

StagingPool::~StagingPool() {
  std::map<size_t, std::vector<std::byte*>> idle;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->closed = true;
    idle.swap(shared_->idle);
    shared_->cached = 0;
  }
  for (auto& [capacity, buffers] : idle) {
    for (std::byte* p : buffers) shared_->destroy(p, capacity);
  }
}

StagingPool::Buffer StagingPool::acquire(size_t size) {
  Buffer b;
  if (size == 0) return b;
  const size_t capacity = size_class(size);
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (capacity > shared_->max_in_use - shared_->in_use) return b;
    shared_->in_use += capacity;  // taken now, so concurrent callers cannot overshoot together
    auto it = shared_->idle.find(capacity);
    if (it != shared_->idle.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      shared_->cached -= capacity;
    }
  }
  if (p == nullptr) p = shared_->make(capacity);
  if (p == nullptr) {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->in_use -= capacity;
    return b;
  }
  b.pool_ = shared_;
  b.data_ = p;
  b.capacity_ = capacity;
  return b;
}

bool StagingPool::could_fit(size_t size) const { return size_class(size) <= shared_->max_in_use; }

size_t StagingPool::max_in_use() const { return shared_->max_in_use; }

uint64_t StagingPool::releases() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->releases;
}

bool StagingPool::wait_release(uint64_t seen, std::chrono::steady_clock::time_point until) const {
  std::unique_lock<std::mutex> lock(shared_->mu);
  return shared_->released.wait_until(lock, until, [&] { return shared_->releases != seen; });
}

size_t StagingPool::buffers_made() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->made;
}

size_t StagingPool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->in_use;
}

size_t StagingPool::bytes_cached() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->cached;
}

}  // namespace rgpu::server
