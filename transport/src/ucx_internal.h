// Internal types of the UCX transport: the wire frames, the worker core with
// its progress thread, connections and payloads. Not a public header.
#pragma once

#include <ucp/api/ucp.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frame_assembler.h"
#include "rgpu/transport/transport.h"
#include "wire.h"

namespace rgpu::transport::ucx {

// A header-only message copied for UCX to send on its own (see
// UcxConnection::send_then); freed by the completion callback.
class Core;
struct OwnedSend {
  Core* core;
  Frame frame;
  std::vector<std::byte> data;
  std::shared_ptr<std::atomic<int>> in_flight;  // its connection's count of sends not yet complete
};

// A send nobody waits for whose payload the caller keeps until done()
// (Connection::send_detached): one or two UCX requests on `worker`. Tracked
// by its Core from posting to completion, so that a worker destroyed with
// such requests outstanding still gives every payload back.
struct DetachedSend {
  Core* core = nullptr;
  ucp_worker_h worker = nullptr;
  Frame frames[2];
  std::vector<std::byte> head;  // the frame and header (one request) or the header (two)
  std::function<void(const Status&)> done;
  int pending = 0;              // guarded by the Core's detached lock
  ucs_status_t status = UCS_OK;  // the first failure
  std::shared_ptr<std::atomic<int>> in_flight;  // its connection's count of sends not yet complete
};

// ---- A worker of one's own -------------------------------------------------

// The UCX worker of one accepted peer (docs/transport.md, "A worker per
// peer"): its receive queues are written by that peer alone, so a peer that
// dies in the middle of writing one (a shared-memory FIFO element reserved
// and never completed) stalls nobody else. Destroyed on the progress thread
// as soon as its connection's endpoint is closed (Core::end_peer_worker), or
// when the last owner (the connection, the payloads it handed out) lets go
// of it. A transfer still waiting on it then ends with an error: UCX 1.13
// does not always complete a rendezvous receive whose sender died, and the
// worker's destruction is what guarantees that nothing writes into the
// receive buffer afterwards.
class PeerWorker {
 public:
  PeerWorker(std::shared_ptr<Core> core, ucp_worker_h worker) : core_(std::move(core)), worker_(worker) {}
  PeerWorker(const PeerWorker&) = delete;
  PeerWorker& operator=(const PeerWorker&) = delete;
  ~PeerWorker();
  ucp_worker_h get() const { return worker_; }
  // Runs fn(worker) unless the worker is destroyed; false then. Thread-safe.
  template <class Fn>
  bool use(Fn&& fn) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (gone_) return false;
    fn(worker_);
    return true;
  }
  bool gone() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return gone_;
  }

 private:
  friend class Core;
  std::shared_ptr<Core> core_;
  ucp_worker_h worker_;
  mutable std::shared_mutex mu_;
  bool gone_ = false;  // guarded by mu_: destroyed, nothing may touch it
};

// ---- Completion of one or more UCX requests --------------------------------

// Counts outstanding requests and records the first error. Lives on the stack
// of the waiting thread; completion callbacks run on the progress thread.
class Core;
class UcxConnection;

struct Waiter {
  explicit Waiter(Core* c) : core(c) {}
  Core* const core;
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  bool done = false;
  ucs_status_t status = UCS_OK;

  // Before posting a request; complete() once it is done (or failed to post).
  void add();
  void complete(ucs_status_t s);
};

// Thread-safe; keeps its Core alive. Releases the rendezvous data unreceived
// when destroyed before receive().
class RndvPayload final : public IncomingPayload {
 public:
  // `worker` is the one the data arrived on; `owner` keeps a peer's own alive.
  RndvPayload(std::shared_ptr<Core> core, ucp_worker_h worker, std::shared_ptr<PeerWorker> owner, void* desc,
              size_t size)
      : core_(std::move(core)), worker_(worker), owner_(std::move(owner)), desc_(desc), size_(size) {}
  ~RndvPayload() override;
  size_t size() const override { return size_; }
  Status receive(void* dst) override;

 private:
  std::shared_ptr<Core> core_;
  ucp_worker_h worker_;
  std::shared_ptr<PeerWorker> owner_;
  void* desc_;  // UCX descriptor until receive() or release
  size_t size_;
  std::atomic<bool> taken_{false};
  // Hands the descriptor back to UCX unreceived (see the definition).
  void release_later();
};

// One listening socket. Touched by the progress thread; the Listener object
// only asks the progress thread to destroy it.
struct ListenerState {
  Core* core = nullptr;
  AcceptFn on_accept;
  ucp_listener_h listener = nullptr;
  std::string address;
};

// Something to hand to user code once UCX progress has returned.
struct Event {
  enum Kind { kMessage, kAccept, kPeerBye, kClosed } kind = kMessage;
  std::shared_ptr<UcxConnection> conn;
  Message message;
  size_t bytes = 0;  // kMessage: counted against the connection's max_parked_bytes
  Status status;
  std::shared_ptr<ListenerState> listener;  // kAccept
};

// The UCX context, worker and progress thread of one Transport. Shared with
// connections, listeners and payloads so that they fail cleanly (instead of
// touching freed UCX objects) once the transport is gone. Thread-safe: post()
// and the waits may be called from any thread; the *_locked and on_* members
// run on the progress thread only.
class Core : public std::enable_shared_from_this<Core> {
 public:
  static Result<std::shared_ptr<Core>> create(const UcxOptions& options);
  ~Core();

  // Starts the progress thread.
  void start();
  // Closes everything, stops the thread and destroys the worker. Idempotent;
  // must not be called from the progress thread.
  void shutdown();

  // Runs fn on the progress thread (inline when already on it). Dropped, and
  // false returned, once the transport is shutting down.
  bool post(std::function<void()> fn);
  // Progress thread, inside UCX callbacks: runs fn after progress returns.
  void defer(std::function<void()> fn);
  // Makes the progress thread run ucp_worker_progress soon.
  void kick();
  // True on the thread that holds the progress role: the progress thread, or
  // a caller inside drive_until(). Everything documented as "progress thread
  // only" belongs to the role holder.
  bool on_progress_thread() const {
    return std::this_thread::get_id() == thread_id_.load(std::memory_order_relaxed);
  }

  // Progresses the worker on the calling thread, taking the progress role
  // from the progress thread, until done() or `budget` has passed; returns
  // done(). Handlers may run on the calling thread meanwhile.
  bool drive_until(const std::function<bool()>& done, std::chrono::microseconds budget);

  // Memory registrations (ucp_mem_map), looked up by address on every bulk
  // transfer. Thread-safe.
  Status register_memory(void* ptr, size_t size);
  void unregister_memory(void* ptr);
  // The registration covering [ptr, ptr + size), or null.
  ucp_mem_h find_memh(const void* ptr, size_t size);
  // Sets the memory handle of a transfer when its buffer is registered.
  void set_memh(ucp_request_param_t* param, const void* ptr, size_t size);

  // Waits for every request counted in `waiter`: progresses inline on the
  // progress thread, sleeps on the waiter elsewhere. Returns the first error,
  // or UCS_ERR_CANCELED once `on` (the worker the requests were posted on,
  // when it is a peer's) is destroyed with requests still counted.
  ucs_status_t wait(Waiter& waiter, const PeerWorker* on = nullptr);
  // Waits (as above) until pred() is true or the deadline passes; pred is
  // evaluated under `mu`, which cv is notified under.
  bool wait_until(std::mutex& mu, std::condition_variable& cv, const std::function<bool()>& pred,
                  std::chrono::steady_clock::time_point deadline);

  // The main worker: listeners, connections this side opened.
  ucp_worker_h worker() const { return worker_; }
  // Progress thread only: a new worker for one accepted peer (an error when
  // UCX cannot make one). Off (null, ok) when UcxOptions::worker_per_peer is.
  Result<std::shared_ptr<PeerWorker>> make_peer_worker();
  // Any thread, from ~PeerWorker: the progress thread destroys it soon.
  void retire_worker(ucp_worker_h worker);
  // Progress thread only: the endpoint on `worker` is closed. After a clean
  // close (both sides said bye) the worker waits for the next connection;
  // otherwise it is destroyed at the next command run, whoever still holds
  // it. Reuse also keeps memory flat: UCX 1.13 keeps about 2 MB of a
  // destroyed worker that carried rendezvous traffic (its fragment buffers
  // stay in the context's registration cache).
  void end_peer_worker(std::shared_ptr<PeerWorker> worker, bool clean);
  static constexpr size_t kMaxIdleWorkers = 1024;
  // Whether UCX_TLS leaves shared memory in, and whether `addr` (a client's)
  // is one of this host's own addresses: only such a peer can write into a
  // shared-memory queue of rgpud, so only it gets a worker of its own.
  bool shared_memory_possible() const { return shared_memory_possible_; }
  bool is_local_address(const sockaddr* addr) const;
  // Detached sends (DetachedSend): track() before the first request is
  // posted, with one count held by the poster; part_started() before each
  // request; part_done() for each request's end and for the poster's count.
  // The last part_done() hands done() to the progress thread. After a
  // worker's destruction (or at shutdown: every worker) abandon_detached()
  // ends the sends still outstanding on it with an error.
  void track_detached(DetachedSend* d);
  void detached_part_started(DetachedSend* d);
  void detached_part_done(DetachedSend* d, ucs_status_t status);
  void abandon_detached(ucp_worker_h worker);
  // Brackets every UCX request that may not complete at once, so that the
  // progress thread keeps polling while one is under way.
  void request_started() { inflight_.fetch_add(1, std::memory_order_acq_rel); }
  void request_ended() { inflight_.fetch_sub(1, std::memory_order_acq_rel); }
  size_t rndv_threshold() const { return rndv_threshold_; }
  // UCX can move CUDA device memory (its context lists the CUDA memory type).
  bool supports_cuda_memory() const { return cuda_memory_; }
  size_t max_inline_header() const { return max_inline_header_; }
  // UcxOptions::initial_limits, for every new connection.
  const ReceiveLimits& initial_limits() const { return initial_limits_; }
  // Why listen() and connect() cannot work with this UCX_TLS, or empty.
  const std::string& unusable_tls() const { return unusable_tls_; }

  // Lifetime guard: readers hold it shared while calling into UCX from any
  // thread and check alive(); shutdown() takes it exclusively.
  std::shared_mutex& life() { return life_; }
  bool alive() const { return alive_; }
  // UCX 1.13 answers an untaken rendezvous (ucp_am_data_release) before it
  // takes the worker's lock. That release holds this exclusively, on the
  // thread with the progress role; every call into a worker from another
  // thread (a send, a receive) holds it shared, around the call only.
  std::shared_mutex& calls_mu() { return calls_mu_; }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  // ---- progress thread only ----
  uint32_t register_connection(std::shared_ptr<UcxConnection> conn);
  void unregister_connection(uint32_t id);
  UcxConnection* find_connection(uint32_t id);
  void push_event(Event ev) { events_.push_back(std::move(ev)); }
  void add_listener(std::shared_ptr<ListenerState> l) { listeners_.push_back(std::move(l)); }
  void remove_listener(const std::shared_ptr<ListenerState>& l);
  ListenerState* find_listener(const ListenerState* raw);
  std::shared_ptr<ListenerState> listener_ptr(const ListenerState* raw);
  // Closes `conn` if the peer has not answered its bye by `deadline`.
  void expect_bye_answer(std::shared_ptr<UcxConnection> conn, std::chrono::steady_clock::time_point deadline);
  // Closes an accepted `conn` if its peer has not sent the hello in time.
  void expect_hello(std::shared_ptr<UcxConnection> conn);
  // Closes a refused `conn` once its connection handshake is surely over
  // (kRefuseDelay): see refuse_request() in ucx_transport.cpp.
  void close_refused_later(std::shared_ptr<UcxConnection> conn);
  static constexpr std::chrono::seconds kRefuseDelay{2};
  // Closes an endpoint; `conn` stays alive until UCX has finished with it.
  void close_ep(ucp_ep_h ep, bool force, std::shared_ptr<UcxConnection> conn);
  // Server side, connection requests before their hello (UcxOptions::
  // max_accepting): admit_request() counts one from `source` (false, and
  // nothing counted, past a limit); every request admitted ends in exactly
  // one release_request(), or becomes an accepting endpoint
  // (add_accepting), whose count take_accepting() (the hello came) or
  // drop_accepting() (closed first) gives back.
  bool admit_request(const std::string& source);
  void release_request(const std::string& source);
  void add_accepting(ucp_ep_h ep, std::shared_ptr<UcxConnection> conn, std::string source);
  std::shared_ptr<UcxConnection> take_accepting(ucp_ep_h ep);
  void drop_accepting(ucp_ep_h ep) { (void)take_accepting(ep); }
  // Requests refused for the limits so far; logged at most once a second.
  void note_rejected(const std::string& source);

 private:
  Core() = default;
  void run();
  void run_commands();
  void dispatch_events();
  // Progresses the worker once; when idle, sleeps on the event fd for at most
  // timeout_ms. The main loop passes dispatching=true: it must not sleep while
  // events wait for their handlers. Inline waits inside a handler pass false.
  void progress_or_sleep(int timeout_ms, bool dispatching);
  // The progress role: who may progress the worker and touch progress-thread
  // state. The progress thread holds it except while it sleeps on the event
  // fd or steps aside for a caller in drive_until().
  void acquire_role();
  bool try_acquire_role();
  void release_role();
  void close_all_locked();
  void expire_deadlines();
  // Every worker, main first: progress (the sum of their counts) and arm
  // (UCS_OK when all are armed, else the first other status).
  unsigned progress_workers();
  ucs_status_t arm_workers();
  // Sets the AM handlers and adds the event fd of a new worker.
  Status adopt_worker(ucp_worker_h worker);
  // Progresses the idle workers now and then (every kIdleSleepMs), so that
  // their old peers' sockets close.
  void tend_idle_workers();
  std::chrono::steady_clock::time_point next_idle_tend_;
  // Adds (on) or removes the worker's event fd from the progress thread's set.
  Status watch_efd(ucp_worker_h worker, bool on);
  // Destroys the workers retired or ended since the last call (role holder
  // only, outside UCX progress: run_commands() calls it).
  void destroy_retired_workers();
  void destroy_worker(ucp_worker_h worker);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  // Peer workers (role holder only), and those retired by their owners.
  std::vector<ucp_worker_h> peer_workers_;
  bool worker_per_peer_ = true;
  bool shared_memory_possible_ = false;
  std::vector<sockaddr_storage> local_addresses_;  // this host's, at create()
  std::mutex retired_mu_;
  std::vector<ucp_worker_h> retired_;  // guarded by retired_mu_
  std::vector<std::shared_ptr<PeerWorker>> ending_;        // role holder only
  std::vector<std::shared_ptr<PeerWorker>> idle_workers_;  // role holder only: closed cleanly, reusable
  bool workers_gone_ = false;          // guarded by retired_mu_: shutdown destroyed them all
  int epoll_fd_ = -1;
  size_t rndv_threshold_ = 0;
  bool cuda_memory_ = false;
  size_t max_inline_header_ = 0;
  ReceiveLimits initial_limits_;
  std::string unusable_tls_;

  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};  // the role holder, if any
  std::mutex role_mu_;
  std::atomic<int> drivers_waiting_{0};  // callers asking for the role
  bool dispatching_ = false;  // a handler is running (role holder only)
  std::chrono::microseconds idle_spin_{30};
  std::chrono::microseconds wait_drive_{0};     // how long wait() drives the worker itself
  std::chrono::microseconds inflight_poll_{0};  // how long the progress thread polls while requests are in flight
  std::atomic<bool> stopping_{false};
  std::atomic<bool> dead_{false};  // worker destroyed
  std::chrono::steady_clock::time_point last_activity_;
  int backoff_ms_ = 0;
  std::mutex detached_mu_;
  std::unordered_set<DetachedSend*> detached_;  // guarded by detached_mu_
  // UCX requests posted and not yet completed (sends, receives, fetches).
  std::atomic<int> inflight_{0};
  std::chrono::steady_clock::time_point stop_deadline_;
  int closing_eps_ = 0;
  // Connections waiting for their peer (the answer to a bye, a hello), closed
  // at the deadline if still in `state` then.
  struct Deadline {
    std::chrono::steady_clock::time_point at;
    std::weak_ptr<UcxConnection> conn;
    int state;
    bool refused = false;  // close_refused_later: no hello was expected
  };
  std::vector<Deadline> deadlines_;
  std::chrono::milliseconds hello_timeout_{10000};
  std::atomic<uint64_t> wake_seq_{0};
  // Connection requests before their hello (progress thread only).
  struct Accepting {
    std::shared_ptr<UcxConnection> conn;
    std::string source;
  };
  std::unordered_map<ucp_ep_h, Accepting> accepting_;
  std::unordered_map<std::string, size_t> pre_hello_by_source_;
  size_t pre_hello_ = 0;
  size_t max_accepting_ = 256;
  size_t max_accepting_per_source_ = 64;
  uint64_t rejected_ = 0;
  uint64_t rejected_logged_ = 0;
  std::chrono::steady_clock::time_point rejected_log_at_;

  std::mutex commands_mu_;
  std::vector<std::function<void()>> commands_;

  struct Registration {
    size_t size;
    ucp_mem_h memh;
  };
  std::shared_mutex regs_mu_;
  std::map<uintptr_t, Registration> regs_;  // by start address
  std::atomic<bool> have_regs_{false};

  std::shared_mutex life_;
  bool alive_ = false;  // guarded by life_
  std::shared_mutex calls_mu_;

  // Progress-thread state.
  std::unordered_map<uint32_t, std::shared_ptr<UcxConnection>> connections_;
  std::vector<std::shared_ptr<ListenerState>> listeners_;
  std::deque<Event> events_;
  uint32_t next_conn_id_ = 1;
};

// One UCX endpoint. Thread-safe as Connection requires; receive-side state is
// touched only by the progress thread.
class UcxConnection final : public Connection,
                            public std::enable_shared_from_this<UcxConnection>,
                            private AssemblerSink {
 public:
  enum State : int { kConnecting, kOpen, kClosing, kClosed };

  UcxConnection(std::shared_ptr<Core> core, std::string peer, bool client, const ReceiveLimits& limits);
  ~UcxConnection() override;

  Status send(Bytes header, Bytes payload) override { return send_then(header, payload, nullptr); }
  Status send_then(Bytes header, Bytes payload, const std::function<void()>& on_posted) override;
  void send_detached(Bytes header, Bytes payload, std::function<void(const Status&)> done) override;
  void close() override;
  std::string peer() const override { return peer_; }
  bool poll_until(const std::function<bool()>& done, std::chrono::microseconds budget) override {
    return core_->drive_until(done, budget);
  }
  Status register_memory(void* ptr, size_t size) override { return core_->register_memory(ptr, size); }
  void unregister_memory(void* ptr) override { core_->unregister_memory(ptr); }
  bool supports_cuda_memory() const override { return core_->supports_cuda_memory(); }
  void set_receive_limits(const ReceiveLimits& limits) override;

  // ---- used by the core and transport (progress thread unless noted) ----
  // Creates the endpoint: to a listener (client) or from a request (server),
  // the latter on `own` (its peer's worker) when given, else the main one.
  Status create_client_ep(const struct sockaddr_storage& addr, socklen_t len);
  Status create_server_ep(ucp_conn_request_h request, std::shared_ptr<PeerWorker> own);
  // The worker this connection's endpoint lives on.
  ucp_worker_h worker() const { return worker_; }
  // Client: sends the hello. Server: answers it and queues on_accept.
  Status send_hello();
  void on_hello(const Hello& hello);
  void on_hello_ack(const Hello& ack);
  // A kAmMessage for this connection, arrived on its endpoint. Returns the
  // AM callback's status.
  ucs_status_t on_am(const Frame& frame, const std::byte* header, size_t header_len, void* data,
                     size_t length, uint64_t recv_attr);
  // A frame or ack naming this connection arrived from another endpoint (or
  // from one UCX could not name): logs once; the connection is not touched.
  void note_foreign_frame(const char* what, bool has_reply_ep);
  // A message of this connection was handed to its handler (or dropped).
  void message_dispatched(size_t bytes) { assembler_.release(bytes); }
  // The endpoint failed or the peer went away.
  void on_error(ucs_status_t status);
  // Closes the endpoint now (force) or after a flush; reports `status`.
  void close_locked(bool force, Status status);
  // Local close(): sends the bye, then closes when the peer does (or later).
  void begin_close();
  // Client connect(): waits for the hello ack or a failure (any thread).
  Status wait_established(std::chrono::steady_clock::time_point deadline);

  void set_handler(ConnectionHandler handler) { handler_ = std::move(handler); }
  void set_listener(std::shared_ptr<ListenerState> l) { listener_ = std::move(l); }
  ConnectionHandler& handler() { return handler_; }
  uint32_t local_id() const { return local_id_; }
  void set_local_id(uint32_t id) { local_id_ = id; }
  ucp_ep_h ep() const { return ep_; }
  bool close_reported() const { return close_reported_; }
  void set_close_reported() { close_reported_ = true; }

 private:
  struct HeaderFetch;

  ucs_status_t post_am(Waiter& waiter, const Frame& frame, const void* header, size_t header_len,
                       const void* data, size_t length);
  // One request of a detached send; its status (UCS_OK also when it
  // completed at once).
  ucs_status_t post_detached(DetachedSend* d, const void* header, size_t header_len, const void* data,
                             size_t length);
  // The send flags and memory handle of a message with `length` payload bytes.
  void set_am_params(ucp_request_param_t* p, const Frame& frame, const void* data, size_t length);
  static void on_header_fetched(void* request, ucs_status_t status, size_t length, void* user_data);
  // Closes the connection for what its peer did; logs and reports `why` once.
  void fail(Status why);
  // AssemblerSink: queue what the assembler completed for the handlers.
  void deliver(uint64_t seq, Message message, size_t bytes) override;
  void peer_bye() override;

  const std::shared_ptr<Core> core_;
  const std::string peer_;
  const bool client_;
  uint32_t local_id_ = 0;
  uint32_t peer_id_ = 0;  // written before the connection is handed out
  ucp_ep_h ep_ = nullptr;
  ucp_worker_h worker_ = nullptr;             // set with ep_
  std::shared_ptr<PeerWorker> own_worker_;  // the peer's own, when it has one

  // Senders hold it shared while posting to ep_; closing takes it exclusively.
  mutable std::shared_mutex ep_mu_;
  std::atomic<int> state_{kConnecting};
  std::atomic<uint64_t> next_send_seq_{0};

  // Connect handshake (client).
  std::mutex connect_mu_;
  std::condition_variable connect_cv_;
  bool established_ = false;
  Status connect_error_;

  // Receive limits set by set_receive_limits(), picked up by the progress
  // thread at the next frame.
  std::mutex limits_mu_;
  ReceiveLimits new_limits_;
  std::atomic<bool> limits_changed_{false};

  // Receive side, progress thread only.
  FrameAssembler assembler_;
  bool failing_ = false;         // fail() ran: the close is on its way
  bool foreign_logged_ = false;  // a foreign frame naming this connection was logged
  ConnectionHandler handler_;
  bool close_reported_ = false;
  bool dispatched_ = false;  // handed to user code (on_accept or connect() returned)
  bool abandoned_ = false;   // connect() gave up; guarded by connect_mu_
  bool clean_close_ = false;  // a bye came or ours was answered (progress thread only)
  // Sends posted on the endpoint and not complete yet, of every kind. A
  // flushing close does not wait for a rendezvous the peer never fetches,
  // and UCX 1.13 then asserts when it destroys the endpoint (its requests
  // still listed), so close_locked() forces the close while any is left:
  // a forced close cancels them first.
  const std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<ListenerState> listener_;  // server side, until accepted
  Hello hello_buf_{};  // AM header of the hello / ack while UCX sends it
  Frame bye_buf_{};    // AM header of the bye while UCX sends it
  friend class Core;
};

// Whether the UCX_TLS value `tls` (null: unset) can select a shared-memory
// transport; and why it cannot connect anything (empty when it may).
bool tls_may_use_shared_memory(const char* tls);
std::string tls_cannot_connect(const char* tls);

// Parses and resolves "host:port" for UCX.
Status resolve(const std::string& host_port, struct sockaddr_storage* out, socklen_t* len);
// "host:port" of a socket address.
std::string format_sockaddr(const struct sockaddr* addr);
// The address alone, without the port: what a peer's connections share.
std::string format_source(const struct sockaddr* addr);

}  // namespace rgpu::transport::ucx
