// KernelPool: the worker threads of one CPU device, over which the PTX
// interpreter spreads the blocks of a launch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rgpu/ptx/ptx.h"

namespace rgpu::cpudev {

// A fixed set of threads (the device's "multiprocessors"). run() may be called
// by several stream workers at once: every call is a job whose tasks the pool
// threads and the calling thread claim one by one, so a launch always makes
// progress even when the pool is busy with other launches.
// Lifetime: owned by its device; the destructor joins the threads (no run()
// may be in flight). Thread safety: run() and concurrency() are thread-safe.
class KernelPool final : public ptx::WorkerPool {
 public:
  explicit KernelPool(unsigned threads);
  ~KernelPool() override;
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;

  unsigned concurrency() const override { return static_cast<unsigned>(threads_.size()); }
  void run(unsigned n, const std::function<void(unsigned)>& task) override { run_limited(n, task, concurrency()); }
  // As run(), with at most `limit` threads (the caller's included, so at
  // least 1) working on these tasks at once: a context's compute share.
  void run_limited(unsigned n, const std::function<void(unsigned)>& task, unsigned limit);

 private:
  struct Job {
    unsigned n = 0;
    const std::function<void(unsigned)>* task = nullptr;
    unsigned max_helpers = 0;  // pool threads allowed on it at once
    unsigned helpers = 0;      // pool threads on it now (mu_)
    std::atomic<unsigned> next{0};
    std::atomic<unsigned> finished{0};
  };
  // A job a pool thread may join now: tasks left, and room under its limit (mu_ held).
  std::shared_ptr<Job> joinable_locked() const;
  // Claims and runs tasks of `job` until none is left; true if it finished the last one.
  static bool work_on(Job& job);
  void loop();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rgpu::cpudev

namespace rgpu::cpudev {

// The view of a KernelPool one launch of a context with a compute share
// gets: `limit` workers' worth of concurrency. Lives for one launch.
// It also sums the CPU time the pool's threads spent on its tasks (the
// launching thread measures its own), the kernel time a share is charged.
class SharedPool final : public ptx::WorkerPool {
 public:
  SharedPool(KernelPool* pool, unsigned limit) : pool_(pool), limit_(limit == 0 ? 1 : limit) {}
  unsigned concurrency() const override { return limit_; }
  void run(unsigned n, const std::function<void(unsigned)>& task) override;
  int64_t helper_cpu_ns() const { return helper_cpu_ns_.load(); }

 private:
  KernelPool* const pool_;
  const unsigned limit_;
  std::atomic<int64_t> helper_cpu_ns_{0};
};

// CPU time of the calling thread, in nanoseconds.
int64_t thread_cpu_ns();

// Workers of `pool` that a context with compute share `share` uses at once:
// round(share * workers), at least 1, at most all.
unsigned share_of_workers(float share, unsigned workers);

}  // namespace rgpu::cpudev
