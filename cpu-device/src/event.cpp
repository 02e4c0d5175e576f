// Event records, completion and timestamps.
#include "event.h"

namespace rgpu::cpudev {

bool Event::record(const std::shared_ptr<Stream>& stream, const std::function<uint64_t(uint64_t)>& enqueue) {
  // Held across the enqueue so that nobody sees a record without its sequence
  // number; complete() waits for it.
  std::lock_guard lock(mu_);
  uint64_t generation = generation_ + 1;
  uint64_t seq = enqueue(generation);
  if (seq == 0) return false;
  generation_ = generation;
  stream_ = stream;
  seq_ = seq;
  completed_ = false;
  captured_.reset();
  captured_tail_.clear();
  return true;
}

void Event::set_captured(std::shared_ptr<Capture> c, std::vector<GraphNode*> tail) {
  std::lock_guard lock(mu_);
  captured_ = std::move(c);
  captured_tail_ = std::move(tail);
}

std::shared_ptr<Capture> Event::captured(std::vector<GraphNode*>* tail) const {
  std::lock_guard lock(mu_);
  if (tail) *tail = captured_tail_;
  return captured_;
}

void Event::complete(uint64_t generation, Clock::time_point when) {
  std::lock_guard lock(mu_);
  if (generation != generation_) return;
  completed_ = true;
  time_ = when;
}

bool Event::recorded() const {
  std::lock_guard lock(mu_);
  return generation_ != 0;
}

Dependency Event::dependency() const {
  std::lock_guard lock(mu_);
  if (generation_ == 0 || completed_) return {};
  return Dependency{stream_, seq_};
}

bool Event::done() const {
  Dependency d = dependency();
  auto s = d.stream.lock();
  return !s || s->done(d.seq);
}

void Event::wait() const {
  Dependency d = dependency();
  if (auto s = d.stream.lock()) s->wait(d.seq);
}

bool Event::time(Clock::time_point* out) const {
  std::lock_guard lock(mu_);
  if (generation_ == 0 || !completed_) return false;
  *out = time_;
  return true;
}

}  // namespace rgpu::cpudev
