// Poller: the device's completion poller and its threads.
#include "completions.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>

namespace rgpu::server {

Poller::Poller(std::shared_ptr<const DriverTable> driver, PollerOptions options)
    : driver_(std::move(driver)), cu_(*driver_), options_(options) {
  const size_t n = std::max<size_t>(1, options_.threads);
  threads_.reserve(n);
  for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

Poller::~Poller() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  poll_cv_.notify_all();
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Poller::add(Watch watch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Key key{watch.owner, reinterpret_cast<uintptr_t>(watch.ctx),
            watch.order != 0 ? watch.order : next_unordered_++};
    queues_[key].push_back(std::move(watch));
    ++news_;
  }
  poll_cv_.notify_one();
  work_cv_.notify_one();
}

size_t Poller::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, queue] : queues_) n += queue.size();
  for (const auto& batch : ready_) n += batch.items.size();
  return n;
}

CUresult Poller::query(Watch& w, Current* current) {
  if (w.preset != CUDA_SUCCESS) return w.preset;
  if (w.events.empty() && w.client_event == nullptr) return CUDA_SUCCESS;
  if (current != nullptr && (current->ctx != w.ctx || current->epoch != context_epoch_)) {
    // A context the thread had current may have been destroyed and its
    // address reused since: the epoch says when to ask again.
    if (CUresult r = cu_.cuCtxSetCurrent(w.ctx); r != CUDA_SUCCESS) return r;
    current->ctx = w.ctx;
    current->epoch = context_epoch_;
  }
  if (w.client_event != nullptr) {
    if (CUresult r = cu_.cuEventQuery(w.client_event); r != CUDA_SUCCESS) return r;
  }
  if (!w.streams.empty() && w.streams.size() == w.events.size()) {
    // An event per stream: each stream idle means every event is reached,
    // and is seen a step sooner (the device need not get to the record).
    CUresult first = CUDA_SUCCESS;
    bool idle = true;
    for (CUstream s : w.streams) {
      const CUresult r = cu_.cuStreamQuery(s);
      if (r == CUDA_ERROR_NOT_READY) {
        idle = false;
        break;
      }
      if (first == CUDA_SUCCESS) first = r;
    }
    if (idle) return first;
  }
  for (CUevent e : w.events) {
    if (CUresult r = cu_.cuEventQuery(e); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

bool Poller::pass(Current* current) {
  std::map<uint64_t, Batch> claimed;
  for (auto it = queues_.begin(); it != queues_.end();) {
    const uint64_t owner = it->first.owner;
    if (busy_.count(owner) != 0) {
      ++it;
      continue;
    }
    std::deque<Watch>& queue = it->second;
    while (!queue.empty()) {
      const CUresult r = query(queue.front(), current);
      if (r == CUDA_ERROR_NOT_READY) break;
      Batch& batch = claimed[owner];
      batch.owner = owner;
      batch.items.emplace_back(std::move(queue.front()), r);
      queue.pop_front();
    }
    it = queue.empty() ? queues_.erase(it) : std::next(it);
  }
  for (auto& [owner, batch] : claimed) {
    busy_.insert(owner);
    ready_.push_back(std::move(batch));
  }
  return !claimed.empty();
}

void Poller::finish(Batch& batch, Current* current) {
  for (auto& [watch, result] : batch.items) {
    const bool checks = !watch.events.empty() || watch.client_event != nullptr || !watch.streams.empty() ||
                        watch.ctx_synchronize;
    if (result == CUDA_SUCCESS && checks && watch.ctx != nullptr) {
      if (current == nullptr || current->ctx != watch.ctx) {
        result = cu_.cuCtxSetCurrent(watch.ctx);
        if (current != nullptr) current->ctx = result == CUDA_SUCCESS ? watch.ctx : nullptr;
      }
      // Complete already, so none of these waits for device work, except a
      // client's event recorded again meanwhile (the client's own race).
      for (CUevent e : watch.events) {
        if (result == CUDA_SUCCESS) result = cu_.cuEventSynchronize(e);
      }
      if (result == CUDA_SUCCESS && watch.client_event != nullptr) result = cu_.cuEventSynchronize(watch.client_event);
      for (CUstream s : watch.streams) {
        if (result != CUDA_SUCCESS) break;
        const CUresult r = cu_.cuStreamQuery(s);
        if (r != CUDA_ERROR_NOT_READY) result = r;  // not ready: work queued since, not waited for
      }
      if (result == CUDA_SUCCESS && watch.ctx_synchronize) result = cu_.cuCtxSynchronize();
    }
    for (CUevent e : watch.events) cu_.cuEventDestroy(e);
    watch.events.clear();
    if (watch.done) watch.done(result);
    watch.done = nullptr;  // what it holds goes now, on this thread
  }
}

void Poller::run() {
  pthread_setname_np(pthread_self(), "rgpud-poller");  // for ps -L and the thread-bound test
  // Its short sleeps are the latency of a wait: without this the kernel may
  // stretch each by its default slack of 50 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  Current current;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!ready_.empty()) {
      Batch batch = std::move(ready_.front());
      ready_.pop_front();
      running_.insert(batch.owner);
      lock.unlock();
      finish(batch, &current);
      batch.items.clear();
      lock.lock();
      running_.erase(batch.owner);
      busy_.erase(batch.owner);
      ++news_;  // its next watches may be done already: poll again soon
      idle_cv_.notify_all();
      poll_cv_.notify_one();
      continue;
    }
    if (polling_ || queues_.empty()) {
      work_cv_.wait(lock);
      continue;
    }
    // This thread polls until something finishes or nothing is left.
    polling_ = true;
    uint64_t seen = news_;
    auto since = std::chrono::steady_clock::now();
    while (!stop_ && !queues_.empty()) {
      if (pass(&current)) break;
      const auto now = std::chrono::steady_clock::now();
      if (news_ != seen) {
        seen = news_;
        since = now;
      }
      if (now - since < options_.spin) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        continue;
      }
      // Sleeps grow with the time waited so far (a sixteenth of it), so a
      // wait is noticed at most about 6% late, between first_sleep and
      // max_sleep.
      auto sleep = std::chrono::duration_cast<std::chrono::microseconds>(now - since) / 16;
      sleep = std::clamp(sleep, options_.first_sleep, options_.max_sleep);
      poll_cv_.wait_for(lock, sleep, [&] { return stop_ || news_ != seen; });
    }
    polling_ = false;
    // Another thread takes the other batches, or the poller role while this
    // one runs a batch.
    if (!ready_.empty() && !queues_.empty()) work_cv_.notify_one();
    if (ready_.size() > 1) work_cv_.notify_all();
  }
}

std::vector<Watch> Poller::cancel(uint64_t owner) {
  std::vector<Watch> dropped;
  std::unique_lock<std::mutex> lock(mu_);
  // Batches claimed but not started are dropped; a running one is waited for.
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (it->owner != owner) {
      ++it;
      continue;
    }
    for (auto& item : it->items) dropped.push_back(std::move(item.first));
    it = ready_.erase(it);
  }
  idle_cv_.wait(lock, [&] { return running_.count(owner) == 0; });
  busy_.erase(owner);
  const auto first = queues_.lower_bound(Key{owner, 0, 0});
  const auto last = owner == UINT64_MAX ? queues_.end() : queues_.lower_bound(Key{owner + 1, 0, 0});
  for (auto it = first; it != last; ++it) {
    for (Watch& w : it->second) dropped.push_back(std::move(w));
  }
  queues_.erase(first, last);
  ++context_epoch_;
  return dropped;
}

void Poller::drain(uint64_t owner, CUcontext ctx) {
  std::vector<Watch> mine;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // What is claimed already finishes on a poller thread first, in order.
    idle_cv_.wait(lock, [&] { return busy_.count(owner) == 0; });
    const auto first = queues_.lower_bound(Key{owner, 0, 0});
    const auto last = owner == UINT64_MAX ? queues_.end() : queues_.lower_bound(Key{owner + 1, 0, 0});
    for (auto it = first; it != last;) {
      if (it->first.ctx != reinterpret_cast<uintptr_t>(ctx)) {
        ++it;
        continue;
      }
      for (Watch& w : it->second) mine.push_back(std::move(w));
      it = queues_.erase(it);
    }
    if (mine.empty()) {
      ++context_epoch_;
      return;
    }
    busy_.insert(owner);
    running_.insert(owner);
  }
  Batch batch{owner, {}};
  for (Watch& w : mine) {
    CUresult r = query(w, nullptr);
    // The caller waited for the context's work: what still is not ready
    // never will be, in a context about to go.
    if (r == CUDA_ERROR_NOT_READY) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    batch.items.emplace_back(std::move(w), r);
  }
  finish(batch, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(owner);
  busy_.erase(owner);
  ++context_epoch_;
  idle_cv_.notify_all();
}

void Poller::forget(uint64_t owner, void* handle) {
  std::unique_lock<std::mutex> lock(mu_);
  // A batch claimed may be querying it in its final checks.
  idle_cv_.wait(lock, [&] { return busy_.count(owner) == 0; });
  const auto first = queues_.lower_bound(Key{owner, 0, 0});
  const auto last = owner == UINT64_MAX ? queues_.end() : queues_.lower_bound(Key{owner + 1, 0, 0});
  for (auto it = first; it != last; ++it) {
    for (Watch& w : it->second) {
      if (w.client_event != nullptr && static_cast<void*>(w.client_event) == handle) {
        w.client_event = nullptr;
        w.preset = CUDA_ERROR_INVALID_HANDLE;
      }
      std::erase_if(w.streams, [&](CUstream s) { return static_cast<void*>(s) == handle; });
    }
  }
}

DevicePollers::DevicePollers(std::shared_ptr<const DriverTable> driver, size_t devices, PollerOptions options) {
  pollers_.reserve(std::max<size_t>(1, devices));
  for (size_t i = 0; i < std::max<size_t>(1, devices); ++i) pollers_.push_back(std::make_unique<Poller>(driver, options));
}

Poller& DevicePollers::of(int device) {
  if (device < 0 || static_cast<size_t>(device) >= pollers_.size()) return *pollers_[0];
  return *pollers_[static_cast<size_t>(device)];
}

std::vector<Watch> DevicePollers::cancel(uint64_t owner) {
  std::vector<Watch> dropped;
  for (auto& p : pollers_) {
    for (Watch& w : p->cancel(owner)) dropped.push_back(std::move(w));
  }
  return dropped;
}

void DevicePollers::drain(uint64_t owner, CUcontext ctx) {
  for (auto& p : pollers_) p->drain(owner, ctx);
}

void DevicePollers::forget(uint64_t owner, void* handle) {
  for (auto& p : pollers_) p->forget(owner, handle);
}

size_t DevicePollers::threads() const {
  size_t n = 0;
  for (const auto& p : pollers_) n += p->threads();
  return n;
}

}  // namespace rgpu::server
