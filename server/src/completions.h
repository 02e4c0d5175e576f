// Where sessions' blocking waits and deferred copy completions finish: one
// completion poller per device, shared by every session on that device,
// polling events instead of blocking a thread per wait.
#pragma once

#include <cuda.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "rgpu/server/driver_table.h"

namespace rgpu::server {

// One thing to wait for, and what to do when it is over.
struct Watch {
  uint64_t owner = 0;   // the session; cancel(owner) drops its watches
  // Watches of one owner with the same nonzero `order` finish in the order
  // they were added (the copies of one stream); 0: no order.
  uint64_t order = 0;
  CUcontext ctx = nullptr;  // made current on the poller thread to query
  // Complete when every event is (or as soon as one reports an error). The
  // watch owns `events` (destroyed once it finished, by the poller); it
  // borrows `client_event`, which the owner must forget() before destroying.
  std::vector<CUevent> events;
  CUevent client_event = nullptr;
  // Borrowed streams whose errors the result reports once the events are
  // complete (cuStreamQuery, not waiting for work queued since); the owner
  // must forget() one before destroying it. With one event per stream (the
  // event after each stream's work), every stream idle also completes the
  // watch: seen sooner, and never later than the events.
  std::vector<CUstream> streams;
  // Ends with a cuCtxSynchronize in `ctx` (blocking the poller thread): for
  // the rare wait whose streams cannot all be watched by events.
  bool ctx_synchronize = false;
  CUresult preset = CUDA_SUCCESS;  // not CUDA_SUCCESS: done at once with this
  // Runs once, on a poller thread (or the owner's, from drain()), with the
  // watch's result, never while another continuation of the same owner runs.
  std::function<void(CUresult)> done;
};

// How a poller looks for completions.
struct PollerOptions {
  size_t threads = 2;                       // threads of one poller (>= 1)
  std::chrono::microseconds spin{50};       // polls back to back after news
  // Then sleeps of a sixteenth of the time waited, within these bounds.
  std::chrono::microseconds first_sleep{5};
  std::chrono::microseconds max_sleep{1000};
};

// A fixed set of threads that polls every pending watch of one device with
// cuEventQuery and runs the continuations of the finished ones. One thread
// polls at a time, spinning briefly after a watch arrives or finishes, then
// sleeping in steps that grow with the time waited, up to max_sleep (so a
// completion is noticed a few percent late at most); the others run continuations
// (a reply that is a large payload blocks its thread until it is sent). At
// most one continuation of an owner runs at a time, so a client that does
// not read its replies holds one poller thread, not all.
// Thread-safety: every method may be called from any thread but a poller
// thread (a continuation must not cancel or drain). Destruction joins the
// threads and drops the watches left, without running them.
class Poller {
 public:
  Poller(std::shared_ptr<const DriverTable> driver, PollerOptions options);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  void add(Watch watch);
  // After it returns no continuation of `owner` runs or will run. Returns the
  // dropped watches unrun: their continuations may own memory the device is
  // still writing, so the caller keeps them until its contexts are gone.
  // Their events are not destroyed (a context's destruction frees them).
  std::vector<Watch> cancel(uint64_t owner);
  // Finishes, on the calling thread, every watch of `owner` in context `ctx`
  // (whose work the caller has just waited for), in order, before the
  // context goes. The context must be current on the calling thread.
  void drain(uint64_t owner, CUcontext ctx);
  // The owner is about to destroy `handle` (an event or a stream): its
  // watches stop using it (one waiting for the event finishes with
  // CUDA_ERROR_INVALID_HANDLE). Waits for a continuation of the owner that
  // is running.
  void forget(uint64_t owner, void* handle);

  size_t threads() const { return threads_.size(); }
  size_t pending() const;

 private:
  struct Key {  // one queue: the owner's watches of one order in one context
    uint64_t owner;
    uintptr_t ctx;
    uint64_t order;  // the watch's, or a unique number for an unordered one
    bool operator<(const Key& o) const {
      if (owner != o.owner) return owner < o.owner;
      if (ctx != o.ctx) return ctx < o.ctx;
      return order < o.order;
    }
  };
  struct Current {  // the context a poller thread has current, as of an epoch
    CUcontext ctx = nullptr;
    uint64_t epoch = 0;
  };
  struct Batch {
    uint64_t owner;
    std::vector<std::pair<Watch, CUresult>> items;
  };
  void run();
  // One pass over the queues' heads (mu_ held): claims the finished ones of
  // owners not busy. True when something finished.
  bool pass(Current* current);
  // Queries one watch (mu_ held, or by the owner in drain()), making its
  // context current first unless `current` is null: CUDA_ERROR_NOT_READY
  // while pending.
  CUresult query(Watch& w, Current* current);
  // Runs the batch's continuations after the final checks (each event
  // waited for, now instantly, for the sticky errors that a query may not
  // report; the streams' errors), mu_ not held.
  void finish(Batch& batch, Current* current);

  const std::shared_ptr<const DriverTable> driver_;
  const DriverTable& cu_;
  const PollerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable poll_cv_;  // the polling thread's sleep; news wakes it
  std::condition_variable work_cv_;  // the others: batches, or the poller role
  std::condition_variable idle_cv_;  // an owner stopped being busy
  std::map<Key, std::deque<Watch>> queues_;
  std::deque<Batch> ready_;
  std::set<uint64_t> busy_;       // owners with a batch claimed or running
  std::set<uint64_t> running_;    // owners with a batch running now
  uint64_t next_unordered_ = 1ull << 63;
  uint64_t news_ = 0;             // bumped by add(): restarts the spin
  uint64_t context_epoch_ = 1;    // bumped when a context may be gone
  bool polling_ = false;          // a thread holds the poller role
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The pollers of a server's devices, by device ordinal. Thread-safe.
class DevicePollers {
 public:
  DevicePollers(std::shared_ptr<const DriverTable> driver, size_t devices, PollerOptions options);
  // The poller of `device` (the first for an ordinal out of range).
  Poller& of(int device);
  // Poller::cancel, drain and forget on every device's poller (a session's
  // watches may be on several).
  std::vector<Watch> cancel(uint64_t owner);
  void drain(uint64_t owner, CUcontext ctx);
  void forget(uint64_t owner, void* handle);
  size_t threads() const;

 private:
  std::vector<std::unique_ptr<Poller>> pollers_;
};

}  // namespace rgpu::server
