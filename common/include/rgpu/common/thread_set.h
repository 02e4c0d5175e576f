// ThreadSet: threads started for one-off jobs (a blocking wait, a teardown),
// joined as soon as they are done so a long-lived process never accumulates them.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace rgpu {

// Thread-safe. Destruction (or join_all) waits for every job still running.
class ThreadSet {
 public:
  ThreadSet() = default;
  ThreadSet(const ThreadSet&) = delete;
  ThreadSet& operator=(const ThreadSet&) = delete;
  ~ThreadSet() { join_all(); }

  // Runs `job` on a new thread; first joins the jobs that have finished.
  void spawn(std::function<void()> job);
  // Waits for every job, including ones spawned meanwhile.
  void join_all();
  // Jobs not yet joined (finished or not); for tests and metrics.
  size_t size() const;

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap_finished_locked(std::list<Entry>* finished);

  mutable std::mutex mu_;
  std::list<Entry> entries_;
};

}  // namespace rgpu
