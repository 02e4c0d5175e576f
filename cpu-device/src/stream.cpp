// Stream worker loop, sequencing and waiting.
#include "stream.h"

namespace rgpu::cpudev {

namespace {
thread_local bool t_stream_worker = false;
}  // namespace

bool on_stream_worker() { return t_stream_worker; }

void wait_all(const std::vector<Dependency>& deps) {
  for (const Dependency& d : deps) {
    if (auto s = d.stream.lock()) s->wait(d.seq);
  }
}

Stream::Stream(uint64_t handle, uint64_t context, int device, Kind kind, unsigned flags, int priority)
    : handle_(handle), context_(context), device_(device), kind_(kind), flags_(flags), priority_(priority) {
  worker_ = std::thread([this] { run(); });
}

Stream::~Stream() {
  close();
  std::lock_guard jl(join_mu_);
  if (worker_.joinable()) {
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();  // the last owner let go from inside an operation
    } else {
      worker_.join();
    }
  }
}

uint64_t Stream::enqueue(std::vector<Dependency> deps, Work work) {
  std::lock_guard lock(mu_);
  if (closed_) return 0;
  queue_.push_back(Op{std::move(deps), std::move(work)});
  ++enqueued_;
  queue_cv_.notify_one();
  return enqueued_;
}

uint64_t Stream::last_enqueued() const {
  std::lock_guard lock(mu_);
  return enqueued_;
}

bool Stream::done(uint64_t seq) const {
  std::lock_guard lock(mu_);
  return completed_ >= seq;
}

void Stream::wait(uint64_t seq) const {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return completed_ >= seq; });
}

CUresult Stream::take_error() {
  std::lock_guard lock(mu_);
  CUresult e = error_;
  error_ = CUDA_SUCCESS;
  return e;
}

void Stream::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  queue_cv_.notify_all();
}

void Stream::join() {
  close();
  std::lock_guard jl(join_mu_);
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void Stream::run() {
  t_stream_worker = true;
  for (;;) {
    Op op;
    {
      std::unique_lock lock(mu_);
      queue_cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closed and drained
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    wait_all(op.deps);
    CUresult r = CUDA_SUCCESS;
    try {
      r = op.work ? op.work() : CUDA_SUCCESS;
    } catch (const std::bad_alloc&) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } catch (...) {
      r = CUDA_ERROR_UNKNOWN;
    }
    op = Op{};  // release captures before the operation counts as done
    std::lock_guard lock(mu_);
    if (r != CUDA_SUCCESS && error_ == CUDA_SUCCESS) error_ = r;
    ++completed_;
    done_cv_.notify_all();
  }
}

}  // namespace rgpu::cpudev
