// ThreadSet: one-off job threads, reaped when done.
#include "rgpu/common/thread_set.h"

namespace rgpu {

void ThreadSet::reap_finished_locked(std::list<Entry>* finished) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->done->load(std::memory_order_acquire)) {
      auto next = std::next(it);
      finished->splice(finished->end(), entries_, it);
      it = next;
    } else {
      ++it;
    }
  }
}

void ThreadSet::spawn(std::function<void()> job) {
  std::list<Entry> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_finished_locked(&finished);
    auto done = std::make_shared<std::atomic<bool>>(false);
    entries_.push_back(Entry{std::thread([job = std::move(job), done] {
                               job();
                               done->store(true, std::memory_order_release);
                             }),
                             done});
  }
  for (auto& e : finished) e.thread.join();  // already finished: returns at once
}

void ThreadSet::join_all() {
  for (;;) {
    std::list<Entry> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (entries_.empty()) return;
      all.swap(entries_);
    }
    for (auto& e : all) e.thread.join();
  }
}

size_t ThreadSet::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace rgpu
