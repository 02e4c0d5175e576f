// Reaper: teardown jobs on a bounded set of threads.
#include "reaper.h"

#include <pthread.h>

namespace rgpu::server {

void Reaper::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    if (active_ >= max_threads_) return;  // a running thread takes it
    ++active_;
  }
  threads_.spawn([this] { run(); });
}

void Reaper::run() {
  pthread_setname_np(pthread_self(), "rgpud-reaper");
  std::unique_lock<std::mutex> lock(mu_);
  while (!jobs_.empty()) {
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it held goes before the next
    lock.lock();
  }
  --active_;
}

}  // namespace rgpu::server
