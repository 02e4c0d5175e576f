// KernelPool: job queue shared by the device's worker threads.
#include "kernel_pool.h"
#include "worker_priority.h"

#include <time.h>

#include <algorithm>

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

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void SharedPool::run(unsigned n, const std::function<void(unsigned)>& task) {
  const std::thread::id caller = std::this_thread::get_id();
  pool_->run_limited(
      n,
      [&](unsigned i) {
        if (std::this_thread::get_id() == caller) return task(i);
        const int64_t before = thread_cpu_ns();
        task(i);
        helper_cpu_ns_.fetch_add(thread_cpu_ns() - before);
      },
      limit_);
}

unsigned share_of_workers(float share, unsigned workers) {
  if (!(share < 1)) return workers;  // 1, or not a number: all of them
  const unsigned k = static_cast<unsigned>(share * static_cast<float>(workers) + 0.5f);
  return std::clamp(k, 1u, workers == 0 ? 1u : workers);
}

std::shared_ptr<KernelPool::Job> KernelPool::joinable_locked() const {
  for (auto& j : jobs_) {
    if (j->next.load() < j->n && j->helpers < j->max_helpers) return j;
  }
  return nullptr;
}

void KernelPool::run_limited(unsigned n, const std::function<void(unsigned)>& task, unsigned limit) {
  if (n == 0) return;
  auto job = std::make_shared<Job>();
  job->n = n;
  job->task = &task;
  job->max_helpers = limit > 1 ? limit - 1 : 0;  // the caller works on it too
  if (n > 1 && job->max_helpers > 0) {
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
  lower_worker_priority();
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || joinable_locked() != nullptr; });
      if (stopping_) return;
      job = joinable_locked();
      if (job) ++job->helpers;
    }
    if (!job) continue;
    const bool last = work_on(*job);
    std::lock_guard lock(mu_);
    --job->helpers;
    if (last) done_cv_.notify_all();
  }
}

}  // namespace rgpu::cpudev
