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
  void run(unsigned n, const std::function<void(unsigned)>& task) override;

 private:
  struct Job {
    unsigned n = 0;
    const std::function<void(unsigned)>* task = nullptr;
    std::atomic<unsigned> next{0};
    std::atomic<unsigned> finished{0};
  };
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
