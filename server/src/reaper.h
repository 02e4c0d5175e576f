// Where ended sessions are torn down: a bounded set of threads, so that many
// clients leaving at once do not mean a thread each.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include "rgpu/common/thread_set.h"

namespace rgpu::server {

// Runs posted jobs in order on at most `max_threads` threads, started when
// jobs wait and ended when none is left (an idle server holds none).
// Thread-safe. join_all() (and destruction) waits for every job, including
// ones posted meanwhile.
class Reaper {
 public:
  explicit Reaper(size_t max_threads) : max_threads_(max_threads == 0 ? 1 : max_threads) {}
  ~Reaper() { join_all(); }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void post(std::function<void()> job);
  void join_all() { threads_.join_all(); }

 private:
  void run();

  const size_t max_threads_;
  std::mutex mu_;
  std::deque<std::function<void()>> jobs_;
  size_t active_ = 0;  // threads running run() (mu_)
  ThreadSet threads_;
};

}  // namespace rgpu::server
