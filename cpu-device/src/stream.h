// Stream: an in-order queue of operations that the driver's scheduler runs,
// with sequence numbers that other streams and events wait on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda_api.h"
#include "scheduler.h"

namespace rgpu::cpudev {

struct Capture;

// "Wait until `stream` has completed its operation number `seq`." A stream
// that no longer exists has completed everything it was given.
struct Dependency {
  std::weak_ptr<Stream> stream;
  uint64_t seq = 0;
};

// The work of one operation; returns its status (an error is kept by the
// stream and reported by the next synchronizing call).
using Work = std::function<CUresult()>;

// Where an operation runs: on a scheduler worker, or (host functions, which
// may block for long) on a host thread of its own.
enum class OpKind { kDevice, kHost };

// A stream of one context. Operations run in enqueue order, one at a time,
// each once its dependencies completed; no thread is tied to a stream.
// Lifetime: shared (context, scheduler queue, operation in flight). Thread
// safety: all methods are thread-safe.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  enum class Kind { kLegacy, kPerThread, kUser };

  Stream(Scheduler* scheduler, uint64_t handle, uint64_t context, int device, Kind kind, unsigned flags,
         int priority);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  uint64_t handle() const { return handle_; }
  uint64_t context() const { return context_; }
  int device() const { return device_; }
  Kind kind() const { return kind_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_.load(std::memory_order_relaxed); }
  void set_priority(int p) { priority_.store(p, std::memory_order_relaxed); }
  // Attributes set by cuStreamSetAttribute: hints this device does not need
  // (every access goes to host memory), kept so that they read back.
  struct Attributes {
    CUaccessPolicyWindow window{};
    CUsynchronizationPolicy sync_policy = CU_SYNC_POLICY_AUTO;
    CUlaunchMemSyncDomainMap domain_map{0, 1};
    CUlaunchMemSyncDomain domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
  };
  Attributes attributes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return attributes_;
  }
  void set_attributes(const Attributes& a) {
    std::lock_guard<std::mutex> lock(mu_);
    attributes_ = a;
  }
  // True for streams that synchronize with the legacy NULL stream.
  bool blocking() const { return kind_ == Kind::kPerThread || (kind_ == Kind::kUser && !(flags_ & CU_STREAM_NON_BLOCKING)); }

  // Appends an operation; returns its sequence number (> 0), or 0 when the
  // stream is closed.
  uint64_t enqueue(std::vector<Dependency> deps, Work work, OpKind kind = OpKind::kDevice);
  uint64_t last_enqueued() const;
  bool done(uint64_t seq) const;
  bool idle() const { return done(last_enqueued()); }
  // Blocks until operation `seq` has completed.
  void wait(uint64_t seq) const;
  // The first error of an operation since the last call, and clears it.
  CUresult take_error();
  // No operation is accepted afterwards; queued ones still run.
  void close();
  // close(), then wait until every queued operation has run.
  void join();
  // Stops waiting for other streams: operations run without their
  // dependencies from now on (the context is being destroyed, and a
  // dependency on another context's stream may never complete).
  void abandon_waits();

  // The capture sequence this stream records into (graph.h), or null.
  std::shared_ptr<Capture> capture() const;
  void set_capture(std::shared_ptr<Capture> c);

  // Scheduler side: runs the next operation if its dependencies are met,
  // else parks the stream until they are. Called on a worker, only for a
  // stream that was handed to Scheduler::ready().
  void step();

 private:
  struct Op {
    std::vector<Dependency> deps;
    Work work;
    OpKind kind = OpKind::kDevice;
  };
  // Idle: nothing to run. Queued: in the scheduler's queue. Running: a
  // worker is in step(). Parked: the head operation waits for another
  // stream. Host: the head operation runs on a host thread.
  enum class State { kIdle, kQueued, kRunning, kParked, kHost };

  // True when `seq` is done; otherwise `waiter` is woken when it is.
  bool done_or_notify(uint64_t seq, const std::weak_ptr<Stream>& waiter);
  // A dependency this stream waits for may have completed.
  void wake();
  // Counts the head operation done and hands the stream on.
  void finish(CUresult r);
  static CUresult run(const Work& work) noexcept;

  Scheduler* const scheduler_;
  const uint64_t handle_;
  const uint64_t context_;
  const int device_;
  const Kind kind_;
  const unsigned flags_;
  std::atomic<int> priority_;

  mutable std::mutex mu_;
  Attributes attributes_;  // guarded by mu_
  mutable std::condition_variable done_cv_;
  std::deque<Op> queue_;
  // The head operation once taken from queue_; touched only by the thread
  // that owns the stream's step (state kRunning) or under mu_ otherwise.
  std::optional<Op> current_;
  State state_ = State::kIdle;
  bool recheck_ = false;         // a wake() came while running
  bool abandon_waits_ = false;
  std::vector<std::pair<uint64_t, std::weak_ptr<Stream>>> waiters_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool closed_ = false;
  CUresult error_ = CUDA_SUCCESS;
  std::shared_ptr<Capture> capture_;
};

}  // namespace rgpu::cpudev
