// KernelPool: job queue shared by the device's worker threads.
#include "kernel_pool.h"

namespace rgpu::cpudev {

KernelPool::KernelPool(unsigned threads) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

KernelPool::~KernelPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    work_cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
}

bool KernelPool::work_on(Job& job) {
  bool last = false;
  for (;;) {
    unsigned i = job.next.fetch_add(1);
    if (i >= job.n) return last;
    (*job.task)(i);
    if (job.finished.fetch_add(1) + 1 == job.n) last = true;
  }
}

void KernelPool::run(unsigned n, const std::function<void(unsigned)>& task) {
  if (n == 0) return;
  auto job = std::make_shared<Job>();
  job->n = n;
  job->task = &task;
  if (n > 1) {
    std::lock_guard lock(mu_);
    jobs_.push_back(job);
    work_cv_.notify_all();
  }
  work_on(*job);
  std::unique_lock lock(mu_);
  // Claimed tasks may still be running on pool threads.
  done_cv_.wait(lock, [&] { return job->finished.load() == job->n; });
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if (*it == job) {
      jobs_.erase(it);
      break;
    }
  }
}

void KernelPool::loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] {
        if (stopping_) return true;
        for (auto& j : jobs_) {
          if (j->next.load() < j->n) return true;
        }
        return false;
      });
      if (stopping_) return;
      for (auto& j : jobs_) {
        if (j->next.load() < j->n) {
          job = j;
          break;
        }
      }
    }
    if (job && work_on(*job)) {
      std::lock_guard lock(mu_);
      done_cv_.notify_all();
    }
  }
}

}  // namespace rgpu::cpudev
