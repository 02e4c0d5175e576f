// Event: the latest record of an event on a stream, and its timestamp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "stream.h"

namespace rgpu::cpudev {

using Clock = std::chrono::steady_clock;
struct Capture;
struct GraphNode;

// An event of one context. Each record replaces the previous one; the event
// completes when its stream reaches the record, which then stamps the time.
// Lifetime: shared (the driver's handle table and pending record operations).
// Thread safety: all methods are thread-safe.
class Event {
 public:
  Event(uint64_t handle, uint64_t context, unsigned flags) : handle_(handle), context_(context), flags_(flags) {}

  uint64_t handle() const { return handle_; }
  uint64_t context() const { return context_; }
  unsigned flags() const { return flags_; }
  bool timing() const { return !(flags_ & CU_EVENT_DISABLE_TIMING); }

  // Makes a new record on `stream`: `enqueue(generation)` must enqueue the
  // operation that calls complete(generation) and return its sequence number
  // (0 when it could not). Returns false in that case.
  bool record(const std::shared_ptr<Stream>& stream, const std::function<uint64_t(uint64_t)>& enqueue);
  // Called on the stream's worker when the record is reached.
  void complete(uint64_t generation, Clock::time_point when);

  bool recorded() const;
  // The latest record as a dependency; empty when never recorded.
  Dependency dependency() const;
  // True when never recorded or the latest record has completed.
  bool done() const;
  // Blocks until done().
  void wait() const;
  // The time of the latest record, when it has completed.
  bool time(Clock::time_point* out) const;
  // A record made while its stream was capturing: no operation, only the
  // capture and the nodes a stream waiting for the event comes after. A
  // later record() forgets it.
  void set_captured(std::shared_ptr<Capture> c, std::vector<GraphNode*> tail);
  std::shared_ptr<Capture> captured(std::vector<GraphNode*>* tail) const;

 private:
  const uint64_t handle_;
  const uint64_t context_;
  const unsigned flags_;
  mutable std::mutex mu_;
  uint64_t generation_ = 0;  // 0: never recorded
  std::weak_ptr<Stream> stream_;
  uint64_t seq_ = 0;
  bool completed_ = false;
  Clock::time_point time_{};
  std::shared_ptr<Capture> captured_;
  std::vector<GraphNode*> captured_tail_;
};

}  // namespace rgpu::cpudev
