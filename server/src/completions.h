// Where a session's blocking waits run, off its executor: waiter threads for
// synchronize-style calls, and per-stream lanes that answer async
// device-to-host copies in order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "rgpu/common/thread_set.h"

namespace rgpu::server {

// Threads are bounded: at most `max_waiters` waiter threads (a wait beyond
// them runs on the caller, so a client that keeps that many open is served
// one at a time, on its own executor) and `lanes` lane threads, which streams
// share by hash (a stream keeps its order in its lane).
// Thread-safety: run_wait() and queue() may be called from any thread;
// stop() once, by the owner, after which queued lane jobs still run and
// stop() returns when every thread has ended.
class Completions {
 public:
  Completions(size_t max_waiters, size_t lanes) : max_waiters_(max_waiters), lane_count_(lanes) {}
  ~Completions() { stop(); }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  // Runs a blocking wait on a waiter thread, or now when all are busy.
  void run_wait(std::function<void()> job);
  // Runs `job` on the lane of `stream`, after the jobs queued there before it.
  void queue(uint64_t stream, std::function<void()> job);
  // Lets the lanes finish what is queued and joins every thread.
  void stop();

 private:
  struct Lane {
    std::deque<std::function<void()>> queue;
    std::thread thread;
  };
  void run_lane(Lane* lane);

  const size_t max_waiters_;
  const size_t lane_count_;
  ThreadSet waiters_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::unique_ptr<Lane>> lanes_;  // by lane index (mu_)
  bool stop_ = false;
};

}  // namespace rgpu::server
