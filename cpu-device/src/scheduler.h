// Scheduler: the bounded set of threads that runs every stream's operations
// of one driver, and the separate threads that run host functions.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rgpu::cpudev {

class Stream;

// A fixed set of workers takes ready streams in FIFO order and runs one
// operation of each (Stream::step) before taking the next, so every ready
// stream makes progress however many streams exist. A stream whose next
// operation waits for another stream is parked, not held by a worker.
// Host functions block for as long as their caller likes (in rgpud they wait
// for a remote client), so they never run on a worker: run_host() hands them
// to a set of host threads that grows on demand and shrinks after
// `kHostIdle` of idleness.
// Lifetime: owned by the driver; outlives every stream (the destructor joins
// all threads; no stream may have work left). Thread safety: thread-safe.
class Scheduler {
 public:
  explicit Scheduler(unsigned workers);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `stream` to have Stream::step() called on a worker. The stream
  // must not be queued or stepping already (Stream's state ensures it).
  void ready(std::shared_ptr<Stream> stream);
  // Runs `job` on a host thread: an idle one, or a new one.
  void run_host(std::function<void()> job);

  unsigned workers() const { return static_cast<unsigned>(workers_.size()); }
  // Host threads alive now (idle ones included).
  size_t host_threads() const;

  static constexpr std::chrono::milliseconds kHostIdle{2000};

 private:
  struct HostThread {
    std::thread thread;
    bool done = false;  // guarded by host_mu_; set as the thread's last act
  };
  void worker_loop();
  void host_loop(HostThread* self);
  void reap_hosts_locked();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Stream>> ready_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;

  mutable std::mutex host_mu_;
  std::condition_variable host_cv_;
  std::deque<std::function<void()>> host_jobs_;
  size_t host_idle_ = 0;  // host threads waiting for a job
  bool host_stopping_ = false;
  std::list<HostThread> hosts_;
};

// True on a scheduler worker or host thread (inside a host function, for
// instance), where API calls are refused: they could wait on, or destroy,
// the very stream that runs them.
bool on_stream_worker();

}  // namespace rgpu::cpudev
