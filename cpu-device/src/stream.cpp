// Stream sequencing, parking on dependencies, and waiting.
#include "stream.h"

#include <new>

namespace rgpu::cpudev {

Stream::Stream(Scheduler* scheduler, uint64_t handle, uint64_t context, int device, Kind kind, unsigned flags,
               int priority)
    : scheduler_(scheduler),
      handle_(handle),
      context_(context),
      device_(device),
      kind_(kind),
      flags_(flags),
      priority_(priority) {}

Stream::~Stream() {
  // A stream that no longer exists has completed everything it was given.
  std::vector<std::pair<uint64_t, std::weak_ptr<Stream>>> waiters;
  {
    std::lock_guard lock(mu_);
    waiters.swap(waiters_);
  }
  for (auto& [seq, w] : waiters) {
    if (auto s = w.lock()) s->wake();
  }
}

uint64_t Stream::enqueue(std::vector<Dependency> deps, Work work, OpKind kind) {
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    if (closed_) return 0;
    queue_.push_back(Op{std::move(deps), std::move(work), kind});
    seq = ++enqueued_;
    if (state_ != State::kIdle) return seq;  // the current step or finish() picks it up
    state_ = State::kQueued;
  }
  scheduler_->ready(shared_from_this());
  return seq;
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
}

void Stream::join() {
  std::unique_lock lock(mu_);
  closed_ = true;
  done_cv_.wait(lock, [&] { return completed_ >= enqueued_; });
}

void Stream::abandon_waits() {
  bool schedule = false;
  {
    std::lock_guard lock(mu_);
    abandon_waits_ = true;
    if (state_ == State::kParked) {
      state_ = State::kQueued;
      schedule = true;
    } else if (state_ == State::kRunning) {
      recheck_ = true;
    }
  }
  if (schedule) scheduler_->ready(shared_from_this());
}

bool Stream::done_or_notify(uint64_t seq, const std::weak_ptr<Stream>& waiter) {
  std::lock_guard lock(mu_);
  if (completed_ >= seq) return true;
  waiters_.emplace_back(seq, waiter);
  return false;
}

void Stream::wake() {
  bool schedule = false;
  {
    std::lock_guard lock(mu_);
    if (state_ == State::kParked) {
      state_ = State::kQueued;
      schedule = true;
    } else if (state_ == State::kRunning) {
      recheck_ = true;  // step() looks at the dependencies again before parking
    }
  }
  if (schedule) scheduler_->ready(shared_from_this());
}

CUresult Stream::run(const Work& work) noexcept {
  try {
    return work ? work() : CUDA_SUCCESS;
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

void Stream::step() {
  std::unique_lock lock(mu_);
  state_ = State::kRunning;
  for (;;) {
    recheck_ = false;
    if (!current_) {
      if (queue_.empty()) {
        state_ = State::kIdle;
        return;
      }
      current_ = std::move(queue_.front());
      queue_.pop_front();
    }
    if (abandon_waits_) current_->deps.clear();
    // Other streams' locks are taken without ours: streams wait on each
    // other in both directions.
    lock.unlock();
    std::vector<Dependency>& deps = current_->deps;
    bool blocked = false;
    while (!deps.empty()) {
      auto s = deps.back().stream.lock();
      if (s && !s->done_or_notify(deps.back().seq, weak_from_this())) {
        blocked = true;
        break;
      }
      deps.pop_back();
    }
    lock.lock();
    if (!blocked) break;
    if (recheck_ || abandon_waits_) continue;
    state_ = State::kParked;  // wake() queues it again
    return;
  }
  Op op = std::move(*current_);
  current_.reset();
  if (op.kind == OpKind::kHost) {
    state_ = State::kHost;
    lock.unlock();
    scheduler_->run_host([self = shared_from_this(), work = std::move(op.work)]() mutable {
      CUresult r = run(work);
      work = nullptr;  // release captures before the operation counts as done
      self->finish(r);
    });
    return;
  }
  lock.unlock();
  CUresult r = run(op.work);
  op = Op{};  // release captures before the operation counts as done
  finish(r);
}

void Stream::finish(CUresult r) {
  std::vector<std::weak_ptr<Stream>> wake_up;
  bool more = false;
  {
    std::lock_guard lock(mu_);
    if (r != CUDA_SUCCESS && error_ == CUDA_SUCCESS) error_ = r;
    ++completed_;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->first <= completed_) {
        wake_up.push_back(std::move(it->second));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    done_cv_.notify_all();
    // One operation per turn: the stream goes to the back of the queue so
    // that other ready streams get a worker too.
    more = !queue_.empty();
    state_ = more ? State::kQueued : State::kIdle;
  }
  for (auto& w : wake_up) {
    if (auto s = w.lock()) s->wake();
  }
  if (more) scheduler_->ready(shared_from_this());
}

std::shared_ptr<Capture> Stream::capture() const {
  std::lock_guard lock(mu_);
  return capture_;
}

void Stream::set_capture(std::shared_ptr<Capture> c) {
  std::lock_guard lock(mu_);
  capture_ = std::move(c);
}

}  // namespace rgpu::cpudev
