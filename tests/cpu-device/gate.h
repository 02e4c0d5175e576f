// Test helper: a host function that holds a stream until the test opens it,
// so tests can observe work that is queued but not yet run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rgpu::cpudev::test {

// Thread-safe. Must outlive the streams it was launched on (or be opened).
class Gate {
 public:
  // A CUhostFn; `user` is a Gate*. Waits at most 30 s so a failing test ends.
  static void CUDA_CB hold(void* user) {
    auto* g = static_cast<Gate*>(user);
    std::unique_lock lock(g->mu_);
    ++g->entered_;
    g->cv_.notify_all();
    g->cv_.wait_for(lock, std::chrono::seconds(30), [&] { return g->open_; });
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until `n` holders have entered (at most 10 s).
  bool wait_entered(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_ >= n; });
  }
  // Runs call() while another thread, once a holder has entered, waits 50 ms
  // and opens the gate; whether call() returned only after the gate opened
  // (it waited for the held stream).
  template <class Call>
  bool call_waits_for_opening(Call&& call) {
    std::atomic<bool> opened{false};
    std::atomic<bool> entered{false};
    std::thread opener([&] {
      entered = wait_entered(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      opened = true;
      open();
    });
    call();
    const bool waited = opened.load();
    opener.join();
    return entered.load() && waited;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
};

}  // namespace rgpu::cpudev::test
