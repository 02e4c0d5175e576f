// The client's session with one rgpud, above its Connection: batched calls,
// the flusher, pipelined copies, host functions and statistics.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/graph_ops.h"
#include "rgpu/transport/transport.h"
#include "connection.h"
#include "host_memory.h"

namespace rgpu::shim {

// Whether RGPU_LEASE is this process's to present: RGPU_LEASE_PID unset (a
// lease handed over by hand) or naming this process (rgpu run --pool sets it
// for COMMAND; processes COMMAND starts ask the pool for their own, since a
// server admits a lease's token once).
bool lease_is_ours();

struct ClientOptions {
  std::string server;  // host:port
  // The tenant the client speaks for and its secret (RGPU_TENANT,
  // RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE). With a secret, the client
  // proves it to a server that asks and insists that the server proves it
  // back; the secret itself never travels.
  std::string tenant;
  std::string auth_token;
  std::chrono::milliseconds connect_timeout{5000};
  // RGPU_INTEGRITY=on insists on per-message integrity; unset or "auto"
  // leaves it to the server (docs/security.md).
  protocol::IntegrityMode integrity = protocol::IntegrityMode::kAuto;
  // What the session asks for (zero: no preference). Environment, which
  // overrides: RGPU_REQUEST_DEVICES, RGPU_REQUEST_MEMORY (bytes),
  // RGPU_LEASE_SECONDS, RGPU_LEASE. See docs/protocol.md.
  Resources request;
  // Async calls are flushed when this many are queued, or after flush_delay.
  size_t batch_calls = 1024;
  std::chrono::microseconds flush_delay{100};
  // A thread waiting for a sync reply first polls the transport itself for
  // this long (no thread handoff on the reply path), then sleeps. 0: never
  // poll. Environment: RGPU_POLL_US.
  std::chrono::microseconds poll_budget{200};
  // Synchronous copies of at least twice this size move in pieces of it, so
  // that the network and the server's device copy overlap. 0: never. The
  // server advises a value at the handshake; RGPU_PIPELINE_CHUNK (bytes)
  // overrides it.
  uint64_t pipeline_chunk = 0;
  // CUDA_VISIBLE_DEVICES as the program's environment has it (unset: every
  // device of the session); see visible_devices.h.
  std::optional<std::string> visible_devices;
};

// The answer to a sync call. `api` and `code` are the status as the server
// sent it (the call's own, or an earlier async call's error reported here);
// `result` is that status as a CUresult for driver callers: a driver code
// as is, another API's success as CUDA_SUCCESS and its failure as
// CUDA_ERROR_UNKNOWN. A library caller maps `code` by `api` itself.
struct SyncResult {
  SyncResult() = default;
  explicit SyncResult(CUresult r) : result(r), code(static_cast<uint32_t>(r)) {}
  CUresult result = CUDA_SUCCESS;
  wire::Api api = wire::Api::DRIVER;
  uint32_t code = 0;
  std::vector<uint64_t> values;
  bool need_image = false;  // moduleLoad: the server lacks the image
  // The server's reason when it sends one with a success (funcGetAttributes:
  // why the function's launches are refused).
  std::string reason;
};

// What the caller wants done with device-to-host bytes of a sync reply.
struct OutBuffer {
  void* data = nullptr;
  uint64_t size = 0;
  // Null: the reply must carry exactly `size` bytes. Otherwise any inline
  // reply of at most `size` bytes is accepted and its length stored here
  // (a generated call's packed out-arguments, whose strings vary).
  uint64_t* received = nullptr;
};

// What the client sent, for RGPU_STATS (written as one JSON line when the
// Client goes, at the library's teardown) and tests. Thread-safe counters.
struct ClientStats {
  std::atomic<uint64_t> sync_calls{0};
  std::atomic<uint64_t> async_calls{0};
  std::atomic<uint64_t> batches{0};             // messages of calls sent
  std::atomic<uint64_t> payload_bytes_sent{0};  // bulk bytes beside the messages
  std::atomic<uint64_t> modules_sent{0};        // images the server lacked
  std::atomic<uint64_t> module_bytes_sent{0};
  std::atomic<uint64_t> modules_cached{0};      // loads the server answered from its cache
};

// The session with one rgpud, shared by all threads of the process.
// Thread-safe: every member may be called from any thread. Calls from all
// threads are sent in one order (batch_mu_ orders them); async calls are
// queued in a batch that goes out with the next sync call, when full, or
// after a short delay (the flusher thread). Host functions run on its
// callback thread. Sync replies and copy-out completions are the
// Connection's (connection.h). Destroy it when no other thread uses it:
// destruction stops its threads and closes the connection (the server then
// frees everything the session held); nothing of it runs afterwards.
class Client {
 public:
  // Connects and completes the handshake. `transport` defaults to UCX.
  static Result<std::unique_ptr<Client>> connect(const ClientOptions& options,
                                                 std::shared_ptr<transport::Transport> transport = nullptr);
  ~Client();

  // The devices the program sees, numbered from 0: the session's devices as
  // CUDA_VISIBLE_DEVICES selected them. The one place where the program's
  // ordinals meet the server's (DeviceInfo::server_ordinal).
  const std::vector<DeviceInfo>& devices() const { return visible_; }
  // What the welcome said: protocol version, features, the grant.
  const SessionInfo& session() const { return connection_->session(); }
  ClientStats& stats() { return stats_; }
  // Appends the statistics as one JSON line to `path` (RGPU_STATS).
  void write_stats(const std::string& path) const;
  // The program's page-locked host memory, registered with the transport.
  HostMemory& host_memory() { return *host_memory_; }
  int driver_version() const { return connection_->session().driver_version; }

  // Queues an async call. `fill` sets the call's union member on the builder.
  template <class Fill>
  void call_async(uint64_t ctx, Fill&& fill) {
    std::unique_lock<std::mutex> lock(batch_mu_);
    wire::Call::Builder call = add_call_locked(ctx);
    fill(call);
    stats_.async_calls.fetch_add(1, std::memory_order_relaxed);
    after_async_locked(lock);
  }

  // Queues an async call whose bulk `payload` (large host data) goes with it;
  // returns once the payload buffer may be reused.
  template <class Fill>
  CUresult call_async_bulk(uint64_t ctx, Fill&& fill, transport::Bytes payload) {
    std::unique_lock<std::mutex> lock(batch_mu_);
    if (connection_->failed()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    wire::Call::Builder call = add_call_locked(ctx);
    fill(call);
    call.setPayloadBytes(payload.size());
    return send_batch_locked(payload, &lock).is_ok() ? CUDA_SUCCESS : CUDA_ERROR_DEVICE_UNAVAILABLE;
  }

  // An async device-to-host copy: `dst` is written by the time a later sync
  // call that covers `stream` returns.
  void copy_out_async(uint64_t ctx, uint64_t src, void* dst, uint64_t size, uint64_t stream);

  // Sends a sync call (with everything queued before it) and waits for its
  // reply. `payload` travels as bulk data; `out` receives reply bytes.
  template <class Fill>
  SyncResult call_sync(uint64_t ctx, Fill&& fill, transport::Bytes payload = {}, OutBuffer out = {}) {
    std::unique_lock<std::mutex> lock(batch_mu_);
    if (connection_->failed()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
    wire::Call::Builder call = add_call_locked(ctx);
    fill(call);
    if (!payload.empty()) call.setPayloadBytes(payload.size());
    uint64_t id = call.getId();
    stats_.sync_calls.fetch_add(1, std::memory_order_relaxed);
    return finish_sync_locked(lock, id, payload, out);
  }

  // One Call.graph round trip: `op` with its arguments as
  // protocol/graph_ops.h lays them out.
  SyncResult graph_call(uint64_t ctx, protocol::GraphOp op, std::initializer_list<uint64_t> args);

  // A large synchronous copy, moved in pieces of `chunk` bytes so that the
  // network and the server's device copy overlap: every piece but the last
  // goes as an async copy on `stream`, the last as the sync call, and an
  // error of any piece is the result. `stream` is the sync copy's stream.
  SyncResult copy_in_pipelined(uint64_t ctx, uint64_t dst, const void* src, uint64_t size, uint64_t stream,
                               uint64_t chunk);
  SyncResult copy_out_pipelined(uint64_t ctx, void* dst, uint64_t src, uint64_t size, uint64_t stream,
                                uint64_t chunk);

  // Waits until every async copy-out issued before now (on `stream`, or on
  // any stream when `stream` is ~0) has landed in its buffer.
  CUresult wait_copy_outs(uint64_t stream);
  // True when async copy-outs issued so far on `stream` (~0: any) are pending.
  bool copy_outs_pending(uint64_t stream);

  // Queues a host function: when `stream` reaches it, the server asks us to
  // run fn(data) on the library's callback thread, holding the stream until
  // it returns (host functions run on the client, in stream order).
  void host_func_async(uint64_t ctx, uint64_t stream, CUhostFn fn, void* data);

  // Records work with a client-side effect into the capture of `stream` as
  // a host step that runs at every replay of the graph (docs/compatibility.md):
  // fn(data) for kRun; for kCopyIn the `size` bytes at `host` are read when
  // the step runs and go to `device`; for kCopyOut those of `device` land at
  // `host`. *recorded is false when the stream does not capture (the caller
  // then does the work as usual).
  CUresult capture_host_step(uint64_t ctx, uint64_t stream, protocol::HostStepKind kind, CUhostFn fn, void* data,
                             void* host, uint64_t device, size_t size, bool* recorded);
  // Before a captured graph is launched: a host step of it may read host
  // memory that an async copy issued earlier writes, so once this process
  // has host steps, every copy-out issued so far lands first.
  void settle_copy_outs_for_host_steps();

  // Host data of an async copy is read when the stream gets to it, so a copy
  // queued behind a host function (which may write that data) waits until
  // the host functions before it on `stream` (any stream: ~0) have run.
  void wait_host_funcs(uint64_t stream);

  // Sends queued async calls now.
  void flush();
  bool connection_failed() const { return connection_->failed(); }

  static constexpr uint64_t kAnyStream = Connection::kAnyStream;
  // Data up to this size is sent inline in the message; larger goes as payload.
  // (Kept well under 64 KiB, the transports' fragment size, so that a message
  // with its bytes inline still travels as one fragment.)
  static constexpr size_t kInlineLimit = 32 * 1024;
  // Synchronous copies of at least twice options().pipeline_chunk are pipelined.
  const ClientOptions& options() const { return options_; }

 private:
  // An async error the server reported that no sync call has returned yet.
  struct StickyError {
    wire::Api api = wire::Api::DRIVER;
    uint32_t code = 0;
  };

  Client() = default;
  wire::Call::Builder add_call_locked(uint64_t ctx);
  void after_async_locked(std::unique_lock<std::mutex>& lock);
  // Sends the batch ending with sync call `id` (marked as wanting a reply)
  // and waits for its reply. An async error of a call numbered `own_from` or
  // later (the pieces of one pipelined copy) is this call's result rather
  // than a later one's.
  SyncResult finish_sync_locked(std::unique_lock<std::mutex>& lock, uint64_t id, transport::Bytes payload,
                                OutBuffer out, uint64_t own_from = 0);
  // Reads a reply into a SyncResult: its status, values and bytes.
  // `reports`: whether the oldest unreported async error becomes its result
  // (a synchronizing call's).
  SyncResult read_reply(const ArrivedReply& arrived, uint64_t id, OutBuffer out, uint64_t own_from, bool reports);
  // `code` of `api` as a CUresult (see SyncResult); logs once per API.
  CUresult as_driver_result(wire::Api api, uint32_t code);
  // Sends the open batch. With `lock` (holding batch_mu_), the lock is
  // released as soon as the batch has its place in the connection's order,
  // so that other threads queue calls while a bulk payload is in transfer.
  Status send_batch_locked(transport::Bytes payload, std::unique_lock<std::mutex>* lock = nullptr);
  void on_host_func_call(uint64_t id, std::vector<std::byte> bytes);
  // Runs host step `id` with the bytes the server sent; returns those to
  // send back.
  std::vector<std::byte> run_host_step(uint64_t id, const std::vector<std::byte>& bytes);
  void run_flusher();
  void run_callbacks();

  ClientOptions options_;
  std::unique_ptr<Connection> connection_;
  std::vector<DeviceInfo> visible_;
  std::unique_ptr<HostMemory> host_memory_;
  ClientStats stats_;
  bool pipeline_chunk_from_env_ = false;

  // The open batch (batch_mu_).
  std::mutex batch_mu_;
  std::unique_ptr<capnp::MallocMessageBuilder> builder_;
  std::vector<capnp::Orphan<wire::Call>> calls_;
  uint64_t next_id_ = 1;
  std::chrono::steady_clock::time_point batch_started_;

  std::mutex sticky_mu_;
  StickyError sticky_;                          // sticky_mu_
  std::atomic<uint64_t> foreign_api_logged_{0};  // bit per wire::Api: its codes were mapped once

  // Host functions: registered by id; run in arrival order on callbacks_.
  struct HostFunc {
    CUhostFn fn;
    void* data;
    uint64_t stream;
  };
  std::mutex host_mu_;
  std::condition_variable host_cv_;
  std::map<uint64_t, HostFunc> host_funcs_;
  // Host steps of captured graphs, by id: kept for every replay. Nothing
  // tells the client that a graph is gone, so they stay (a few words each)
  // for the life of the connection.
  struct HostStep {
    protocol::HostStepKind kind;
    CUhostFn fn;
    void* data;
    void* host;
    size_t size;
  };
  std::map<uint64_t, HostStep> host_steps_;
  uint64_t host_step_serial_ = 0;
  struct HostReady {
    uint64_t id;
    std::vector<std::byte> bytes;
  };
  std::deque<HostReady> host_ready_;
  std::map<uint64_t, int> host_pending_;  // per stream: queued, not yet returned
  bool stop_callbacks_ = false;
  std::thread callbacks_;

  std::condition_variable flush_cv_;
  bool stop_flusher_ = false;
  std::thread flusher_;
};

}  // namespace rgpu::shim
