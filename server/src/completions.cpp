// Completions: waiter threads and completion lanes.
#include "completions.h"

#include <vector>

namespace rgpu::server {

void Completions::run_wait(std::function<void()> job) {
  if (waiters_.size() < max_waiters_) {
    waiters_.spawn(std::move(job));
    return;
  }
  job();
}

void Completions::queue(uint64_t stream, std::function<void()> job) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) {  // no lane threads any more: run it here
      lock.unlock();
      job();
      return;
    }
    std::unique_ptr<Lane>& lane = lanes_[((stream * 0x9E3779B97F4A7C15ull) >> 32) % lane_count_];
    if (!lane) {
      lane = std::make_unique<Lane>();
      Lane* raw = lane.get();
      raw->thread = std::thread([this, raw] { run_lane(raw); });
    }
    lane->queue.push_back(std::move(job));
  }
  cv_.notify_all();  // lanes share the condition; there are few
}

void Completions::run_lane(Lane* lane) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !lane->queue.empty(); });
      if (lane->queue.empty()) return;
      job = std::move(lane->queue.front());
      lane->queue.pop_front();
    }
    job();
  }
}

void Completions::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    for (auto& [index, lane] : lanes_) threads.push_back(std::move(lane->thread));
  }
  cv_.notify_all();
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  waiters_.join_all();
}

}  // namespace rgpu::server
