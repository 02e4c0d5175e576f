// One client session on the server: its executor, handles and allocations.
//
// A session is made of parts with one job each:
//   - decode and dispatch (session.cpp, session_calls.cpp): the executor
//     thread (or the transport's thread, for a batch run inline) reads each
//     call and runs it, holding exec_mu_;
//   - the handle table (handle_table.h): the client's handles, with parents;
//   - the ledger (ledger.h): device memory by owning context;
//   - the device's completion poller (completions.h), shared with the other
//     sessions on the device: blocking waits and deferred copies are
//     registered with it as (events to watch, continuation), and it sends
//     their answers once the events complete; the session has no thread of
//     its own besides its executor.
// The table and the ledger are touched only under exec_mu_; completions and
// the reply path take their own locks.
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
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "call_env.h"
#include "completions.h"
#include "dispatch.h"
#include "error_slot.h"
#include "handle_table.h"
#include "handshake.h"
#include "library_tables.h"
#include "ledger.h"
#include "session_graphs.h"
#include "server_metrics.h"
#include "module_cache.h"
#include "staging_pool.h"
#include "time_share.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/device.h"
#include "rgpu/protocol/graph_ops.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu::server {

class Admission;  // slices.h

// What the server tells every accepted client about itself.
struct ServerInfo {
  std::string build;
  int driver_version = 0;
  using Device = protocol::DeviceDescription;
  std::vector<Device> devices;
  ServerLimits limits;
  // Per device: the fair sharing of its compute among the contexts of its
  // slices, where rgpud enforces shares itself (TimeShare).
  std::vector<std::shared_ptr<FairShare>> fair_shares;
  // The remoted libraries' tables, shared by every session (null: none).
  std::shared_ptr<LibraryTables> libraries;
  // The completion pollers of the devices, shared by every session (null: a
  // session makes its own, as the session fuzzer's do).
  std::shared_ptr<DevicePollers> pollers;
  // Where sessions record their calls and copies (null: nowhere).
  std::shared_ptr<ServerMetrics> metrics;
};

// A session owns everything one authenticated client created: contexts (and
// so their memory, streams and events), staging buffers and the threads that
// wait for device work on its behalf. Calls run on its own executor thread, in
// the client's order, so a slow session never blocks another. Anything that
// goes wrong while reading the client's messages (a malformed message, a
// protocol violation) fails this session alone: it is logged and the
// connection closed, and the server goes on.
// Generated calls (Call.invoke) run through the CallEnv it implements.
// Thread-safety: welcome(), post() and close() may be called from any thread;
// the rest, CallEnv included, runs only under exec_mu_ (executor thread or an
// inline batch). Destruction joins every thread and frees every resource on
// the device.
class Session : public CallEnv {
 public:
  // `admission`: the slices the session holds (client.terms.devices), kept
  // until it has freed everything on the device; null without slices.
  Session(uint64_t id, ClientIdentity client, std::shared_ptr<const DriverTable> driver,
          std::shared_ptr<const ServerInfo> info, std::shared_ptr<ModuleCache> modules,
          std::shared_ptr<transport::Connection> connection,
          std::shared_ptr<const Admission> admission = nullptr);
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint64_t id() const { return id_; }
  const ClientIdentity& client() const { return client_; }
  // For metrics, from any thread: the session's devices, the bytes it holds
  // on each (by ordinal), and its totals.
  const std::vector<Placement>& placements() const { return devices_; }
  uint64_t memory_held(uint32_t ordinal) const { return ledger_.held_on(ordinal); }
  uint64_t memory_held() const {  // on all of its devices
    uint64_t held = 0;
    for (uint32_t i = 0; i < devices_.size(); ++i) held += memory_held(i);
    return held;
  }
  const SessionMetrics& metrics() const { return metrics_; }
  std::chrono::steady_clock::time_point opened() const { return opened_; }
  // Sends the welcome (devices, limits, the server's proof); first, before
  // any message is posted.
  void welcome(const std::vector<uint8_t>& server_proof);
  // Takes a message from the client: queues it for the executor, except a
  // host function's completion, which is handled at once (the executor may be
  // waiting on the very stream that the host function holds).
  void post(transport::Message message);
  // The client is gone: stop executing; the destructor frees the rest.
  void close();
  // When the oldest reply still waiting for the client to take its bytes was
  // sent (time_point::max() when none): rgpud ends a session whose client
  // leaves one untaken past --limit reply-timeout-ms (docs/security.md,
  // "Slow readers").
  std::chrono::steady_clock::time_point oldest_untaken_reply() const;
  // Ends the session from outside its threads, with `reason` in the log.
  void end(const std::string& reason) { fail(reason); }
  // For the session fuzzer only: decodes `message` and runs it on the
  // calling thread as the executor would (holding exec_mu_, inside the
  // exception barrier). False once the session has failed.
  bool handle_for_fuzzing(transport::Message message);

  // CallEnv, for generated dispatch rows.
  const DriverTable& driver() const override { return cu_; }
  const void* library_table(size_t index) const override;
  const ServerLimits& limits() const override { return limits_; }
  uint64_t context() const override { return call_ctx_; }
  bool device(CUdevice ordinal, CUdevice* out) const override;
  bool device_range(uint64_t ptr, uint64_t size) const override { return ledger_.check(call_ctx_, ptr, size); }
  void* find(protocol::HandleKind kind, uint64_t handle) const override { return handles_.find(kind, handle); }
  uint64_t parent(protocol::HandleKind kind, uint64_t handle) const override { return handles_.parent(kind, handle); }
  bool stream(uint64_t handle, CUstream* out) const override {
    return lookup_stream(call_ctx_, handle, out) == CUDA_SUCCESS;
  }
  // Whether the session may hold one more handle (logs once when not).
  bool handle_room() override;
  bool add(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
           std::function<void(void*)> destroy) override;
  bool remove(protocol::HandleKind kind, uint64_t handle) override { return handles_.remove(kind, handle); }

 private:
  struct Incoming {
    transport::Message message;
    std::unique_ptr<protocol::Decoded> decoded;
  };
  // A host function the server holds its stream for until the client ran it;
  // or a host step of a captured graph (session_graphs.cpp), which stays
  // for every replay until the graph releases it.
  struct HostFuncWait {
    Session* session = nullptr;
    uint64_t id = 0;
    bool done = false;
    bool step = false;
    protocol::HostStepKind kind = protocol::HostStepKind::kRun;
    StagingPool::Buffer buffer;  // a copy's bytes between device and client
    size_t size = 0;
    // Set by the graph's user object when the graph lets the step go.
    std::shared_ptr<std::atomic<bool>> released;
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
    StagingPool::Buffer data;  // device-to-host bytes
    const std::byte* direct = nullptr;  // or these, in device memory (bulk_direct_)
    uint64_t data_size = 0;
    std::string message;
    // A reason sent with a successful reply: why launches of the function
    // a funcGetAttributes names are refused.
    std::string reason;
    bool need_image = false;
  };

  void run_executor();
  // Whether a batch may run on the transport's thread the moment it arrives:
  // only calls that never block on device work and never name the
  // per-thread stream (which belongs to the executor thread).
  enum class Inline { kNo, kYes, kIfIdle };  // kIfIdle: when its context is idle
  static constexpr size_t kMaxInlineCalls = 8;  // the most calls of a batch run inline
  static Inline runs_inline(const protocol::Decoded& decoded, const transport::Message& message);
  // Whether every stream of context `ctx` is idle, without blocking.
  bool context_idle(uint64_t ctx);
  // Decodes a message from the client; null when there is nothing to run:
  // it was malformed (the session fails) or a host function's completion
  // (handled at once, outside the call order).
  std::unique_ptr<protocol::Decoded> decode_incoming(const transport::Message& message);
  void handle_message(Incoming& incoming);
  // The exception barrier: runs fn; anything it throws (Cap'n Proto's
  // reports of a malformed message among them) fails the session.
  template <class Fn>
  void guarded(const char* where, Fn&& fn);
  // "0,1.2": the server's device (and slice) of each of the session's devices, for logs.
  std::string placements_text() const;
  // Logs why and closes the connection; teardown follows from its close.
  void fail(const std::string& reason);
  void handle_batch(wire::Batch::Reader batch, transport::Message& message);
  // Runs one call, answering it when it is sync. A call this server does not
  // know, or cannot read, is answered "not supported" when it wants a reply.
  void execute(wire::Call::Reader call, transport::Message& message, bool is_last);
  void execute_call(wire::Call::Reader call, transport::Message& message, bool is_last);
  // Counts a call that ran (its kind, time, and bytes for a copy).
  void record_call(wire::Call::Reader call, std::chrono::steady_clock::time_point start);
  void execute_known(wire::Call::Reader call, transport::Message& message);
  // A generated call: its dispatch row runs in the call's context.
  void invoke(wire::Call::Reader call);
  Outcome execute_sync(wire::Call::Reader call, transport::Message& message);
  // A synchronous copy or memset that would wait for device work: issued as
  // the async operation on its stream, answered by a waiter thread once
  // done, so the executor goes on. False when it is to run now instead.
  bool defer_copy(wire::Call::Reader call, transport::Message& message);
  CUresult execute_async(wire::Call::Reader call, transport::Message& message);

  // A blocking wait (stream/event/context synchronize) not complete yet: the
  // reply goes from the device's poller once `watch` completes, so the
  // executor keeps accepting calls. Past the session's limit of watches,
  // `wait` runs here instead (the client is then served one wait at a time).
  void wait_then_reply(uint64_t call_id, uint64_t ctx, Watch watch, CUresult first_error,
                       const std::function<CUresult()>& wait);
  // Fills `watch` for a context synchronize of `ctx` (current): an event
  // after the work of each busy stream. An error found on an idle stream
  // goes to *first_error. False when the context is idle.
  bool context_watch(uint64_t ctx, Watch* watch, CUresult* first_error, CUresult* result);
  // Registers `watch` with the poller of the device of context `ctx` (a
  // client handle); its continuation runs on a poller thread. False past the
  // session's limit of pending watches (nothing registered).
  bool add_watch(uint64_t ctx, Watch watch);
  // Whether add_watch() would take one more now.
  bool watch_room() const;
  // Replies to sync call `call_id`; a failure carries its reason
  // (ErrorSlot::reason), named after `call` when given.
  void send_reply(uint64_t call_id, Outcome outcome, std::string_view call = {});
  // A reply with a status code of `api` (a generated call's, or a refusal).
  void send_api_reply(uint64_t call_id, InvokeOutcome outcome, std::string_view call = {});
  // Keeps the first failed async call's error and reason for the next reply.
  void record_async_error(uint64_t call_id, uint32_t code, wire::Api api = wire::Api::DRIVER,
                          std::string_view call = {}) {
    errors_.record(call_id, code, api, call);
  }
  // An event recorded on `stream` after the work enqueued so far, or null
  // with *result set when it cannot be made (never a silently unrecorded one:
  // an event never recorded counts as complete).
  CUevent completion_event(CUstream stream, CUresult* result);
  // Async device-to-host copies are answered in order per stream, by the
  // poller, so a copy behind a long kernel on one stream never holds up
  // another stream's.
  void queue_copy_out(uint64_t ctx, uint64_t stream, PendingCopyOut pending);
  void complete_copy_out(PendingCopyOut& p, CUresult waited);
  // Sends a reply with bulk bytes without waiting for the client to take
  // them: `staged` (held until they are gone) or, when empty, bytes in the
  // session's device memory, which no later call of the session may touch
  // until they are gone (the executor waits on untaken_->from_device, and
  // nothing runs inline meanwhile).
  void send_untaken(const kj::Array<capnp::word>& words, transport::Bytes payload, StagingPool::Buffer staged);
  // As send_untaken, for bytes the reply owns (a generated call's
  // out-arguments): `payload` lies in `owned`, held until they are gone.
  void send_untaken(const kj::Array<capnp::word>& words, transport::Bytes payload, std::vector<std::byte> owned);
  struct ReplyBytes;
  void detach_reply(const kj::Array<capnp::word>& words, transport::Bytes payload, std::shared_ptr<ReplyBytes> held,
                    bool from_device);
  // Waits until no reply is being sent from the session's device memory;
  // false when `deadline` passed first, or (`while_open`) the session closed.
  bool wait_device_replies(std::chrono::steady_clock::time_point deadline, bool while_open);
  void reap_staging(bool wait_all);
  // A staging buffer of `size` bytes for a copy. Past the session's limit of
  // bytes in flight, the executor waits for its earlier copies to land and
  // release theirs (back-pressure, as a GPU's copy engine waits), at most
  // kStagingPatience without progress; other threads never wait. Empty,
  // with the reason noted, for a copy that could never fit.
  StagingPool::Buffer staging(size_t size);
  static constexpr std::chrono::seconds kStagingPatience{60};
  void release_all();

  // Makes the session's context `ctx` (a client handle) current on this thread.
  CUresult make_current(uint64_t ctx);
  CUresult set_current(CUcontext ctx) const;
  CUcontext context_object(uint64_t ctx) const {
    return static_cast<CUcontext>(handles_.find(protocol::HandleKind::kContext, ctx));
  }
  // A stream of context `ctx` (one of its own, or a special stream), or
  // CUDA_ERROR_INVALID_HANDLE.
  CUresult lookup_stream(uint64_t ctx, uint64_t handle, CUstream* out) const;
  // An event of any of the session's contexts (waits may cross contexts).
  CUresult lookup_event(uint64_t handle, CUevent* out) const;
  // [ptr, ptr + size) within one allocation of `ctx`; size 0 always passes.
  CUresult check_range(uint64_t ctx, uint64_t ptr, uint64_t size) const;
  // Registers an object a typed call created; refused, the object is
  // released at once and the CUresult says why.
  CUresult add_handle(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
                      HandleTable::Destroy destroy);
  // A context on the session's device `device` (its ordinal, mapped to the
  // server's device; on a slice with a share below 1, limited to that share
  // where the driver can, see docs/sharing.md).
  CUresult create_context(uint64_t handle, int device, unsigned flags);
  // Whether `size` more bytes fit the quota of `ctx`'s device, counting the
  // virtual-memory chunks created there and not mapped yet (which no ledger
  // range counts) as held.
  bool fits(uint64_t ctx, uint64_t size) const;
  // Notes the reason of a refusal for the quota: `asked` bytes (of `what`,
  // when named) past it.
  void note_quota(uint64_t ctx, uint64_t asked, std::string_view what = {}) const;
  // With a memory quota on the device of `ctx`, rewrites a successful
  // cuMemGetInfo's answer: total = the quota (at most the device's), free =
  // total minus what the session holds there (at most what the device has
  // free).
  void answer_for_quota(uint64_t ctx, InvokeOutcome* outcome) const;
  Outcome load_module(wire::Call::Reader call, transport::Message& message);
  CUresult launch(uint64_t ctx, wire::Call::Launch::Reader launch);
  CUresult launch_host_func(uint64_t ctx, wire::Call::HostFunc::Reader host_func);
  static void CUDA_CB host_func_trampoline(void* wait);
  static void device_output(void* session, const char* text, size_t size);
  static void device_error(void* session, const char* text, size_t size);
  void host_func_done(uint64_t id, capnp::Data::Reader bytes);
  CUresult destroy_context(uint64_t handle);
  // Stream capture, graphs and virtual memory (session_graphs.cpp).
  CUresult graph_call(uint64_t ctx, wire::Call::GraphCall::Reader in, std::vector<uint64_t>* values);
  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the capture, when
  // `s` captures: for work with client-side effects that no host step
  // records (docs/compatibility.md).
  CUresult refuse_if_capturing(CUstream s);
  // GraphOp::kCaptureHostStep on the capturing stream `s`.
  CUresult capture_host_step(uint64_t ctx, CUstream s, uint64_t id, protocol::HostStepKind kind, uint64_t address,
                             uint64_t size);
  // Re-adds the ledger segments of the reservation at `base`.
  void sync_segments(uint64_t base);
  void release_graphs();

  // First, so that the slices are given back last, once the device memory
  // they account for is free.
  const std::shared_ptr<const Admission> admission_;
  const uint64_t id_;
  const std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
  const ClientIdentity client_;
  // The session's devices, by its ordinal: its slices, or every device of
  // the server (with the grant's quota) when it was admitted without them.
  const std::vector<Placement> devices_;
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
  SessionMetrics metrics_;
  const DispatchRow* invoked_row_ = nullptr;  // of the generated call running now, for metrics_
  std::atomic<bool> failed_{false};
  bool handle_limit_logged_ = false;
  bool unknown_call_logged_ = false;

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
  HandleTable handles_;
  Ledger ledger_;
  SessionGraphs graphs_;
  uint64_t call_ctx_ = 0;             // the context of the call running now
  CUresult destroy_result_ = CUDA_SUCCESS;  // of the last context destroyed through handles_
  std::deque<Staged> staging_;
  // Contexts on slices with a share, on NVIDIA's driver: their launches' timing.
  std::unordered_map<uint64_t, std::unique_ptr<TimeShare>> time_shares_;
  mutable bool used_per_thread_stream_ = false;  // lookup_stream() notes it

  // First error of an async call since the last reply, and the reasons of
  // errors (the device's faults arrive on its threads).
  ErrorSlot errors_;

  // Incoming queue.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Incoming> inbox_;
  std::atomic<size_t> inbox_size_{0};  // inbox_.size(), read without mu_
  bool closing_ = false;

  // Replies whose bytes the client has not taken yet (send_untaken), shared
  // with their completions, which may run after the session is gone.
  struct Untaken {
    mutable std::mutex mu;
    std::condition_variable cv;
    uint64_t next = 0;
    std::map<uint64_t, std::chrono::steady_clock::time_point> since;  // by serial
    std::atomic<size_t> from_device{0};  // of them, sent from device memory
  };
  const std::shared_ptr<Untaken> untaken_ = std::make_shared<Untaken>();

  // Host functions in flight, by id (host_funcs_mu_).
  std::mutex host_funcs_mu_;
  std::condition_variable host_funcs_cv_;
  std::map<uint64_t, std::unique_ptr<HostFuncWait>> host_funcs_;
  bool host_funcs_closed_ = false;  // the client will run no more

  // The devices' pollers, and this session's watches registered with them
  // (counted: a limit bounds what a client can make the pollers hold).
  const std::shared_ptr<DevicePollers> pollers_;
  std::atomic<size_t> pending_watches_{0};
  // Watches dropped at teardown: kept until the contexts are gone, since
  // their continuations may own buffers the device is still writing.
  std::vector<Watch> cancelled_;

  std::thread executor_;
};

}  // namespace rgpu::server
