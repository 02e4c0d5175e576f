// Stream: an in-order queue of operations run by one worker thread, with
// sequence numbers that other streams and events wait on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_api.h"

namespace rgpu::cpudev {

class Stream;

// "Wait until `stream` has completed its operation number `seq`." A stream
// that no longer exists has completed everything it was given.
struct Dependency {
  std::weak_ptr<Stream> stream;
  uint64_t seq = 0;
};

// The work of one operation; returns its status (an error is kept by the
// stream and reported by the next synchronizing call).
using Work = std::function<CUresult()>;

// A stream of one context. Operations run in enqueue order on the stream's
// own worker thread; each first waits for its dependencies.
// Lifetime: shared; the worker thread exits once close() was called and the
// queue is drained; the destructor closes and joins (or detaches when it runs
// on the worker itself). Thread safety: all methods are thread-safe.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  enum class Kind { kLegacy, kPerThread, kUser };

  Stream(uint64_t handle, uint64_t context, int device, Kind kind, unsigned flags, int priority);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  uint64_t handle() const { return handle_; }
  uint64_t context() const { return context_; }
  int device() const { return device_; }
  Kind kind() const { return kind_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  // True for streams that synchronize with the legacy NULL stream.
  bool blocking() const { return kind_ == Kind::kPerThread || (kind_ == Kind::kUser && !(flags_ & CU_STREAM_NON_BLOCKING)); }

  // Appends an operation; returns its sequence number (> 0), or 0 when the
  // stream is closed.
  uint64_t enqueue(std::vector<Dependency> deps, Work work);
  uint64_t last_enqueued() const;
  bool done(uint64_t seq) const;
  bool idle() const { return done(last_enqueued()); }
  // Blocks until operation `seq` has completed.
  void wait(uint64_t seq) const;
  // The first error of an operation since the last call, and clears it.
  CUresult take_error();
  // No operation is accepted afterwards; the worker exits once drained.
  void close();
  // close(), then wait for the worker to exit.
  void join();

 private:
  struct Op {
    std::vector<Dependency> deps;
    Work work;
  };
  void run();

  const uint64_t handle_;
  const uint64_t context_;
  const int device_;
  const Kind kind_;
  const unsigned flags_;
  const int priority_;

  mutable std::mutex mu_;
  std::condition_variable queue_cv_;
  mutable std::condition_variable done_cv_;
  std::deque<Op> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool closed_ = false;
  CUresult error_ = CUDA_SUCCESS;
  std::mutex join_mu_;
  std::thread worker_;
};

// Waits for each dependency in turn.
void wait_all(const std::vector<Dependency>& deps);

// True on a stream's worker thread (inside a host function, for instance),
// where API calls are refused: they could wait on, or destroy, the very
// stream that runs them.
bool on_stream_worker();

}  // namespace rgpu::cpudev
