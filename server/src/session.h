// One client session on the server: its executor, handles and allocations.
#pragma once

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "handshake.h"
#include "module_cache.h"
#include "staging_pool.h"
#include "rgpu/common/thread_set.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu::server {

// The NULL stream and CUDA's two special stream handles (legacy, per-thread)
// pass through unmapped.
inline bool is_special_stream(uint64_t handle) { return handle <= 2; }

// What the server tells every accepted client about itself.
struct ServerInfo {
  std::string build;
  int driver_version = 0;
  struct Device {
    std::string name;
    CUuuid uuid{};
    uint64_t total_mem = 0;
    std::vector<int32_t> attributes;
    std::vector<bool> attribute_missing;
  };
  std::vector<Device> devices;
  ServerLimits limits;
};

// A session owns everything one authenticated client created: contexts (and
// so their memory, streams and events), staging buffers and the threads that
// wait for device work on its behalf. Calls run on its own executor thread, in
// the client's order, so a slow session never blocks another. Anything that
// goes wrong while reading the client's messages (a malformed message, a
// protocol violation) fails this session alone: it is logged and the
// connection closed, and the server goes on.
// Thread-safety: welcome(), post() and close() may be called from any thread;
// the rest is private to the executor thread. Destruction joins every thread
// and frees every resource on the device.
class Session {
 public:
  Session(uint64_t id, ClientIdentity client, std::shared_ptr<const DriverTable> driver,
          std::shared_ptr<const ServerInfo> info, std::shared_ptr<ModuleCache> modules,
          std::shared_ptr<transport::Connection> connection);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint64_t id() const { return id_; }
  const ClientIdentity& client() const { return client_; }
  // Sends the welcome (devices, limits, the server's proof); first, before
  // any message is posted.
  void welcome(const std::vector<uint8_t>& server_proof);
  // Takes a message from the client: queues it for the executor, except a
  // host function's completion, which is handled at once (the executor may be
  // waiting on the very stream that the host function holds).
  void post(transport::Message message);
  // The client is gone: stop executing; the destructor frees the rest.
  void close();
  // For the session fuzzer only: decodes `message` and runs it on the
  // calling thread as the executor would (holding exec_mu_, inside the
  // exception barrier). False once the session has failed.
  bool handle_for_fuzzing(transport::Message message);

 private:
  struct Allocation {
    uint64_t size;
    uint64_t ctx;        // client context handle that owns it
    uint64_t module = 0;  // module handle for a module global (never freed by cuMemFree)
  };
  struct Module {
    CUmodule module;
    uint64_t ctx;
  };
  struct Function {
    CUfunction function;
    uint64_t module;
  };
  struct Incoming {
    transport::Message message;
    std::unique_ptr<protocol::Decoded> decoded;
  };
  // A host function the server holds its stream for until the client ran it.
  struct HostFuncWait {
    Session* session;
    uint64_t id;
    bool done = false;
  };
  struct Staged {  // host memory the device may still read or write
    CUevent done;
    StagingPool::Buffer buffer;
  };
  struct PendingCopyOut {  // an async device-to-host copy to send back when done
    uint64_t call_id;
    uint64_t ctx;
    CUevent done;
    StagingPool::Buffer buffer;
    uint64_t size;
    CUresult result;  // an error found when the copy was issued
  };
  // The result of one call, to be put into a Reply.
  struct Outcome {
    Outcome() = default;
    explicit Outcome(CUresult r) : result(r) {}
    CUresult result = CUDA_SUCCESS;
    std::vector<uint64_t> values;
    float elapsed_ms = 0;
    StagingPool::Buffer data;  // device-to-host bytes
    const std::byte* direct = nullptr;  // or these, in device memory (bulk_direct_)
    uint64_t data_size = 0;
    std::string message;
    bool need_image = false;
  };

  void run_executor();
  // Whether a batch may run on the transport's thread the moment it arrives:
  // only calls that never block on device work and never name the
  // per-thread stream (which belongs to the executor thread).
  enum class Inline { kNo, kYes, kIfIdle };  // kIfIdle: when its context is idle
  static Inline runs_inline(const protocol::Decoded& decoded, const transport::Message& message);
  // Whether every stream of context `ctx` is idle, without blocking.
  bool context_idle(uint64_t ctx);
  void handle_message(Incoming& incoming);
  // The exception barrier: runs fn; anything it throws (Cap'n Proto's
  // reports of a malformed message among them) fails the session.
  template <class Fn>
  void guarded(const char* where, Fn&& fn);
  // Logs why and closes the connection; teardown follows from its close.
  void fail(const std::string& reason);
  // Whether the session may hold one more handle (logs once when not).
  bool handle_room();
  void handle_batch(wire::Batch::Reader batch, transport::Message& message);
  // Runs one call. Returns true when it was a sync call whose reply was sent
  // (or handed to a waiter thread).
  void execute(wire::Call::Reader call, transport::Message& message, uint64_t& payload_offset, bool is_last);
  Outcome execute_sync(wire::Call::Reader call, transport::Message& message);
  // A synchronous copy or memset that would wait for device work: issued as
  // the async operation on its stream, answered by a waiter thread once
  // done, so the executor goes on. False when it is to run now instead.
  bool defer_copy(wire::Call::Reader call, transport::Message& message);
  CUresult execute_async(wire::Call::Reader call, transport::Message& message);

  // Blocking waits (stream/event/context synchronize) run on their own thread
  // unless already complete, so the executor keeps accepting calls.
  void wait_then_reply(uint64_t call_id, uint64_t ctx, std::function<CUresult()> wait);
  // Runs a blocking wait on a waiter thread, or on the calling executor once
  // the session has kMaxWaiterThreads of them (threads per session are bounded).
  void run_wait(std::function<void()> job);
  static constexpr size_t kMaxWaiterThreads = 32;
  static constexpr size_t kCompletionLanes = 8;
  void send_reply(uint64_t call_id, Outcome outcome);
  void record_async_error(uint64_t call_id, CUresult result);
  // An event recorded on `stream` after the work enqueued so far, or null
  // with *result set when it cannot be made (never a silently unrecorded one:
  // an event never recorded counts as complete).
  CUevent completion_event(CUstream stream, CUresult* result);
  // Async device-to-host copies are answered in order per stream: streams
  // that have had one are spread over up to kCompletionLanes lanes (a queue
  // and its thread), so a copy behind a long kernel on one stream rarely
  // holds up another stream's, and threads stay bounded.
  struct CompletionLane {
    std::deque<PendingCopyOut> queue;
    std::thread thread;
  };
  void queue_copy_out(uint64_t stream, PendingCopyOut pending);
  void run_completions(CompletionLane* lane);
  void reap_staging(bool wait_all);
  void release_all();

  // Makes the session's context `ctx` (a client handle) current on this thread.
  CUresult make_current(uint64_t ctx);
  CUresult set_current(CUcontext ctx) const;
  CUresult lookup_stream(uint64_t handle, CUstream* out) const;
  CUresult lookup_event(uint64_t handle, CUevent* out) const;
  CUresult check_range(uint64_t ptr, uint64_t size) const;
  CUresult create_context(uint64_t handle, int device, unsigned flags);
  Outcome load_module(wire::Call::Reader call, transport::Message& message);
  CUresult launch(wire::Call::Launch::Reader launch);
  CUresult launch_host_func(wire::Call::HostFunc::Reader host_func);
  static void CUDA_CB host_func_trampoline(void* wait);
  static void device_output(void* session, const char* text, size_t size);
  void host_func_done(uint64_t id);
  CUresult destroy_context(uint64_t handle);
  // Drops a context from the session's tables (before it is destroyed).
  void forget_context(uint64_t handle);

  const uint64_t id_;
  const ClientIdentity client_;
  const std::shared_ptr<const DriverTable> driver_;
  const DriverTable& cu_;
  const std::shared_ptr<const ServerInfo> info_;
  const std::shared_ptr<ModuleCache> module_cache_;
  const std::shared_ptr<transport::Connection> connection_;
  // Host buffers for the bytes of copies, registered with the transport.
  StagingPool staging_pool_;
  // Bulk bytes move straight between the transport and device memory: the
  // CPU device (its device memory is host memory here) or a transport that
  // handles CUDA memory (GPUDirect). Otherwise they go through staging.
  const bool bulk_direct_;
  const ServerLimits& limits_;
  std::atomic<bool> failed_{false};
  bool handle_limit_logged_ = false;

  // Held while calls execute, by the executor thread or, for a batch that
  // runs inline, by the transport's thread; queue order is kept because the
  // inline path runs only when the inbox is empty.
  std::mutex exec_mu_;
  std::thread::id executor_id_;

  // The device contexts of this session, for teardown to stop their work
  // while the executor may still be inside a call (live_mu_).
  std::mutex live_mu_;
  std::vector<CUcontext> live_contexts_;

  // Executor state (exec_mu_).
  std::unordered_map<uint64_t, CUcontext> contexts_;
  std::unordered_map<uint64_t, CUstream> streams_;
  std::unordered_map<uint64_t, CUevent> events_;
  std::unordered_map<uint64_t, uint64_t> stream_ctx_;  // stream/event handle -> owning context handle
  std::unordered_map<uint64_t, uint64_t> event_ctx_;
  std::map<uint64_t, Allocation> allocations_;
  std::unordered_map<uint64_t, Module> modules_;
  std::unordered_map<uint64_t, Function> functions_;
  std::deque<Staged> staging_;
  mutable bool used_per_thread_stream_ = false;  // lookup_stream() notes it

  // First error of an async call since the last reply.
  std::mutex async_error_mu_;
  CUresult async_error_ = CUDA_SUCCESS;
  uint64_t async_error_call_ = 0;

  // Incoming queue.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Incoming> inbox_;
  std::atomic<size_t> inbox_size_{0};  // inbox_.size(), read without mu_
  bool closing_ = false;

  // Host functions in flight, by id (host_funcs_mu_).
  std::mutex host_funcs_mu_;
  std::condition_variable host_funcs_cv_;
  std::map<uint64_t, std::unique_ptr<HostFuncWait>> host_funcs_;

  // Waiter threads and the completion queue for async device-to-host copies.
  ThreadSet waiters_;
  std::mutex completions_mu_;
  std::condition_variable completions_cv_;
  std::map<uint64_t, std::unique_ptr<CompletionLane>> lanes_;  // by lane index, < kCompletionLanes
  bool completions_stop_ = false;

  std::thread executor_;

};

}  // namespace rgpu::server
