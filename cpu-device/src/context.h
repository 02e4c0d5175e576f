// Context: the streams and events of one CUDA context and the legacy
// default-stream ordering between them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rgpu/common/fair_share.h"
#include "rgpu/cpudev/memory.h"
#include "stream.h"

namespace rgpu::cpudev {

// State shared between a context and the operations it enqueued; holding it
// never keeps the context (or its streams) alive.
struct ContextState {
  // CUDA_SUCCESS, or the sticky error (e.g. CUDA_ERROR_ILLEGAL_ADDRESS) that
  // every later call in the context returns.
  std::atomic<int> sticky{CUDA_SUCCESS};
  // Set when the context is being destroyed: running kernels stop.
  std::atomic<bool> cancel{false};
  // Isolation group (rgpuCtxSetIsolationGroup): kernels of the context reach
  // only memory of this group. Fixed once the context owns memory.
  std::atomic<uint64_t> group{0};
  // The share of the device's kernel workers its launches use at once
  // (rgpuCtxSetComputeShare); 1: all of them.
  std::atomic<float> compute_share{1.0f};
  // With a share: the device's fair sharing and the context's member id
  // there (share_mu); launches wait their turn and are charged their CPU time.
  std::mutex share_mu;
  std::shared_ptr<FairShare> fair;
  uint64_t fair_id = 0;
  ~ContextState() {
    if (fair) fair->remove(fair_id);
  }
  // Where device printf text goes (rgpuCtxSetPrintfCallback); unset: stdout.
  std::mutex printf_mu;
  void (*printf_callback)(void* user, const char* text, size_t size) = nullptr;
  void* printf_user = nullptr;
  // Where failed device asserts' messages go (rgpuCtxSetErrorOutputCallback,
  // guarded by printf_mu); unset: stderr.
  void (*error_callback)(void* user, const char* text, size_t size) = nullptr;
  void* error_user = nullptr;
  // Where the reasons of kernels' faults go (rgpuCtxSetErrorReasonCallback,
  // guarded by printf_mu); unset: only the log.
  void (*reason_callback)(void* user, CUresult code, const char* text, size_t size) = nullptr;
  void* reason_user = nullptr;
};

// A context of one device. Owns its streams (the legacy NULL stream and the
// per-thread default streams are created on first use), which run on
// `scheduler`.
// Lifetime: shared (driver table and API calls in flight); shutdown() closes
// and drains every stream; the scheduler outlives the context. Thread
// safety: all methods are thread-safe.
class Context {
 public:
  Context(Scheduler* scheduler, uint64_t handle, int device, unsigned flags, bool primary);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  uint64_t handle() const { return handle_; }
  int device() const { return device_; }
  unsigned flags() const { return flags_; }
  bool primary() const { return primary_; }
  const std::shared_ptr<ContextState>& state() const { return state_; }
  CUresult sticky() const { return static_cast<CUresult>(state_->sticky.load()); }
  void set_sticky(CUresult error);

  // Isolation group. set_group() fails (NOT_PERMITTED) once memory_group()
  // was called, so that every allocation and module of the context is in the
  // group its kernels run in; kAnyGroup is INVALID_VALUE.
  CUresult set_group(uint64_t group);
  uint64_t group() const { return state_->group.load(); }
  // The group for the context's next allocation or module; fixes the group.
  uint64_t memory_group();
  // The group copies and memsets issued in this context are restricted to:
  // kAnyGroup for group 0 (a plain program reaches all its memory as before).
  uint64_t copy_group() const {
    uint64_t g = group();
    return g == 0 ? kAnyGroup : g;
  }

  std::shared_ptr<Stream> legacy();
  std::shared_ptr<Stream> per_thread();
  std::shared_ptr<Stream> create_stream(uint64_t handle, unsigned flags, int priority);
  // Closes the stream; it finishes its queued work and is joined later.
  void retire_stream(uint64_t handle);

  // Enqueues `work` on `stream` (which must belong to this context) after
  // `deps`, with the legacy default stream's implicit ordering: an operation
  // on the legacy stream waits for all earlier work of the blocking streams,
  // and an operation on a blocking stream waits for earlier legacy work.
  // Returns the operation's sequence number, 0 if the stream is closed.
  // On a capturing stream the work is recorded as a node of type `type`
  // instead (graph.h), `deps` and the legacy ordering are not used, and the
  // number returned is only nonzero; an operation on the legacy stream while
  // a blocking stream captures invalidates that capture and returns 0.
  // After a 0, capture_refusal() says why.
  uint64_t enqueue(const std::shared_ptr<Stream>& stream, std::vector<Dependency> deps, Work work,
                   OpKind kind = OpKind::kDevice, CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL);
  // Whether the caller may wait for `stream` now: not while it captures
  // (STREAM_CAPTURE_UNSUPPORTED), nor for the legacy stream while a blocking
  // stream captures (STREAM_CAPTURE_IMPLICIT); either invalidates the capture.
  CUresult check_wait(const std::shared_ptr<Stream>& stream);
  // Runs `work` on the calling thread, sets *result and returns true, when
  // `stream` and everything an operation enqueued on it would wait for are
  // idle: it is then ordered exactly as if enqueued, without the handoff to
  // the stream's worker. Holds the context lock while `work` runs (no enqueue
  // on this context meanwhile), so only for short work. False: enqueue it.
  bool run_now_if_idle(const std::shared_ptr<Stream>& stream, const Work& work, CUresult* result);

  // Waits for all work enqueued so far in every stream; returns the sticky
  // error, else the first asynchronous error, else CUDA_SUCCESS.
  CUresult synchronize();
  // Waits for all work enqueued so far in every stream, leaving the errors
  // to the next synchronize or query (cuMemFree waits so, as a GPU does).
  void drain();
  // Cancels running kernels, stops waits on other streams, then lets every
  // stream drain what it was given (kernels that have not started do not
  // run). Returns once nothing of the context runs. Idempotent.
  void shutdown();

 private:
  std::vector<std::shared_ptr<Stream>> all_streams_locked() const;
  // Every stream with the last operation enqueued on it so far, and waits
  // for those.
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> wait_all();
  void reap_locked();

  Scheduler* const scheduler_;
  const uint64_t handle_;
  const int device_;
  const unsigned flags_;
  const bool primary_;
  const std::shared_ptr<ContextState> state_ = std::make_shared<ContextState>();

  std::mutex group_mu_;
  bool group_fixed_ = false;  // guarded by group_mu_

  mutable std::mutex mu_;
  std::shared_ptr<Stream> legacy_;
  std::map<std::thread::id, std::shared_ptr<Stream>> per_thread_;
  std::map<uint64_t, std::shared_ptr<Stream>> streams_;  // user streams by handle
  std::vector<std::shared_ptr<Stream>> retired_;         // closed, maybe still draining
  bool shut_down_ = false;
};

}  // namespace rgpu::cpudev
