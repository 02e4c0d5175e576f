// Scheduler: stream workers and host function threads.
#include "scheduler.h"
#include "worker_priority.h"

#include "stream.h"

namespace rgpu::cpudev {

namespace {
thread_local bool t_stream_worker = false;
}  // namespace

bool on_stream_worker() { return t_stream_worker; }

Scheduler::Scheduler(unsigned workers) {
  if (workers == 0) workers = 1;
  workers_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& t : workers_) t.join();
  std::list<HostThread> hosts;
  {
    std::lock_guard lock(host_mu_);
    host_stopping_ = true;
    host_cv_.notify_all();
    hosts.splice(hosts.end(), hosts_);
  }
  for (auto& h : hosts) h.thread.join();
  std::lock_guard lock(mu_);
  ready_.clear();
}

void Scheduler::ready(std::shared_ptr<Stream> stream) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  ready_.push_back(std::move(stream));
  cv_.notify_one();
}

void Scheduler::worker_loop() {
  lower_worker_priority();
  t_stream_worker = true;
  for (;;) {
    std::shared_ptr<Stream> s;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      s = std::move(ready_.front());
      ready_.pop_front();
    }
    s->step();
  }
}

void Scheduler::run_host(std::function<void()> job) {
  std::lock_guard lock(host_mu_);
  host_jobs_.push_back(std::move(job));
  // Each queued job needs an idle thread of its own: a job must never wait
  // behind another that may block for long.
  if (host_idle_ >= host_jobs_.size()) {
    host_cv_.notify_one();
    return;
  }
  reap_hosts_locked();
  hosts_.emplace_back();
  HostThread* h = &hosts_.back();
  h->thread = std::thread([this, h] { host_loop(h); });
}

void Scheduler::host_loop(HostThread* self) {
  lower_worker_priority();
  t_stream_worker = true;
  std::unique_lock lock(host_mu_);
  for (;;) {
    ++host_idle_;
    bool got = host_cv_.wait_for(lock, kHostIdle, [&] { return host_stopping_ || !host_jobs_.empty(); });
    --host_idle_;
    if (!got || host_jobs_.empty()) {
      self->done = true;  // idle too long, or stopping: reaped by the next run_host()
      return;
    }
    std::function<void()> job = std::move(host_jobs_.front());
    host_jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;
    lock.lock();
  }
}

void Scheduler::reap_hosts_locked() {
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    if (it->done) {
      it->thread.join();  // it only returns after setting done
      it = hosts_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t Scheduler::host_threads() const {
  std::lock_guard lock(host_mu_);
  size_t n = 0;
  for (const auto& h : hosts_) n += h.done ? 0 : 1;
  return n;
}

}  // namespace rgpu::cpudev
