// The transport seam: connections that carry small messages and bulk payloads.
// Implementations: UCX ucp (make_ucx_transport) and in-process (make_inproc_transport).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::transport {

using Bytes = std::span<const std::byte>;

// A payload that arrived with a message. Small payloads are already held in
// memory; large ones (UCX rendezvous) stay at the sender until receive() pulls
// them straight into the buffer the receiver chooses.
// Contract: receive() is called at most once, from any thread, including from
// inside a handler callback. Destroying it without receive() discards the data.
class IncomingPayload {
 public:
  virtual ~IncomingPayload() = default;
  virtual size_t size() const = 0;
  // Receives all size() bytes into dst. Blocks until done or the peer fails.
  virtual Status receive(void* dst) = 0;
};

// One message as delivered: the header bytes (owned) and an optional payload.
struct Message {
  std::vector<std::byte> header;
  std::unique_ptr<IncomingPayload> payload;  // null when the message had none
};

// What a connection accepts from its peer before it fails the connection.
// A peer that exceeds one gets its connection closed: on_closed reports
// kFailed with a message naming the limit, e.g. "peer exceeded max_header
// (70000 > 65536)". A server starts untrusted peers on strict limits and
// relaxes them once the peer has authenticated.
struct ReceiveLimits {
  size_t max_header = size_t{1} << 30;             // bytes of one message header
  uint64_t max_parked_frames = uint64_t{1} << 20;  // frames held out of order
  uint64_t max_parked_bytes = uint64_t{1} << 30;   // header + eager payload bytes held out of order or not yet dispatched
};

// A connection to one peer. Thread-safe: any thread may send. Messages sent on
// one connection are delivered in the order the send() calls were made.
class Connection {
 public:
  virtual ~Connection() = default;
  // Sends `header` (small; copied or transmitted before return) and, when not
  // empty, `payload`, which the transport may read until send() returns.
  // Blocks only until both buffers may be reused, not until the peer handled it.
  virtual Status send(Bytes header, Bytes payload = {}) = 0;
  // As send(), and calls on_posted() exactly once, on the calling thread, as
  // soon as the message has its place in the connection's order (a send
  // begun after on_posted() returns goes after it) and before waiting until
  // the buffers may be reused. A caller that orders its sends under a lock can release the lock
  // there, so that other threads need not wait out this one's bulk transfer.
  virtual Status send_then(Bytes header, Bytes payload, const std::function<void()>& on_posted) {
    Status s = send(header, payload);
    on_posted();
    return s;
  }
  // As send(), without waiting for the peer to take the payload: returns once
  // the message has its place in the connection's order (the header is
  // copied), and calls done(status) exactly once when `payload` may be
  // reused, which must stay valid until then. done runs on the transport's
  // thread, or on the caller's when the message could not be posted; it
  // must not block. A peer that never takes the payload (it stops reading)
  // holds only this message's buffer, never the sending thread; the payload
  // is given back with an error at the latest when the connection ends.
  virtual void send_detached(Bytes header, Bytes payload, std::function<void(const Status&)> done) {
    done(send(header, payload));
  }
  // Closes the connection; later sends fail with kDisconnected. Idempotent.
  virtual void close() = 0;
  // "host:port" of the peer, for logs.
  virtual std::string peer() const = 0;
  // Runs the transport's progress on the calling thread until done() is true
  // or `budget` has passed, and returns done(). Handlers of this transport may
  // run on the calling thread meanwhile, so the caller must hold no lock that
  // a handler takes. For a synchronous request/reply this saves the wakeups of
  // handing the reply from the transport's thread to the caller. Transports
  // without inline progress only evaluate done().
  virtual bool poll_until(const std::function<bool()>& done, std::chrono::microseconds budget) {
    (void)budget;
    return done();
  }
  // Registers host memory [ptr, ptr + size) with this connection's transport
  // for zero-copy transfers: an RDMA transport pins and registers it once here
  // instead of on every transfer, and sends from or receives into a range
  // inside it use that registration. Ranges must not overlap. The
  // registration outlives the connection until unregister_memory() or the
  // transport's end. Thread-safe.
  virtual Status register_memory(void* ptr, size_t size) {
    (void)ptr;
    (void)size;
    return Status::ok();
  }
  // Drops the registration that starts at `ptr`; no transfer may still use it.
  virtual void unregister_memory(void* ptr) { (void)ptr; }
  // Whether bulk transfers may send from and receive into CUDA device memory
  // directly (UCX built with CUDA support: GPUDirect RDMA, or its own copies).
  virtual bool supports_cuda_memory() const { return false; }
  // Replaces what this connection accepts from its peer (see ReceiveLimits).
  // Thread-safe, from any thread, handlers included; applies to frames that
  // arrive after it returns. What is already held counts against the new
  // limits. Transports without limits ignore it.
  virtual void set_receive_limits(const ReceiveLimits& limits) { (void)limits; }
};

// Callbacks for one connection. They run on the transport's own thread, one at
// a time per connection, and may call Connection::send and payload receive().
struct ConnectionHandler {
  std::function<void(Connection&, Message)> on_message;
  // Called once when the peer disconnects or fails, or after close().
  std::function<void(Connection&, const Status&)> on_closed;
};

// A listening endpoint. Destroying it stops accepting; accepted connections live on.
class Listener {
 public:
  virtual ~Listener() = default;
  // The bound address as "host:port" (the real port when 0 was asked for).
  virtual std::string address() const = 0;
};

// Called for each accepted connection; returns the handler for its messages.
using AcceptFn = std::function<ConnectionHandler(std::shared_ptr<Connection>)>;

// A transport instance owns its progress thread(s). Thread-safe.
// Destroying it closes every listener and connection it made.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<std::unique_ptr<Listener>> listen(const std::string& host_port, AcceptFn on_accept) = 0;
  // Fails with kDisconnected (after at most `timeout`) when nobody answers.
  virtual Result<std::shared_ptr<Connection>> connect(const std::string& host_port,
                                                      ConnectionHandler handler,
                                                      std::chrono::milliseconds timeout) = 0;
  // Short name for logs: "ucx" or "inproc".
  virtual const char* name() const = 0;
};

// Splits "host:port"; false for malformed input (no colon, bad port).
bool split_host_port(const std::string& host_port, std::string* host, uint16_t* port);

// UCX ucp transport: active messages, rendezvous for large payloads. UCX picks
// verbs, tcp or shared memory (UCX_TLS is respected).
struct UcxOptions {
  // Payloads at least this large go by rendezvous (zero-copy into the
  // receiver's buffer); smaller ones go eager. 0 = UCX's own choice.
  size_t rendezvous_threshold = 0;
  // How long the progress thread keeps polling after the last activity before
  // it sleeps on the worker's event fd. Polling saves a wakeup when the next
  // message comes soon (a server answering back-to-back calls); a client whose
  // callers poll for their own replies (Connection::poll_until) sets it low.
  std::chrono::microseconds idle_spin{30};
  // How long an accepted connection may take to send the transport hello
  // before it is dropped (it never reaches on_accept).
  std::chrono::milliseconds hello_timeout{10000};
  // Receive limits of every connection from its creation, accepted and
  // connected alike; Connection::set_receive_limits changes them later.
  ReceiveLimits initial_limits;
  // Connections that have not sent the transport hello yet, counted from
  // the moment UCX hands over their connection request: at most
  // `max_accepting` in all and `max_accepting_per_source` from one address.
  // A request past either is refused at once (its endpoint made and closed
  // in one step, never left waiting for a hello), so a flood of endpoints
  // that never say hello cannot exhaust the server's descriptors.
  size_t max_accepting = 256;
  size_t max_accepting_per_source = 64;
  // Each accepted connection gets a UCX worker of its own, with receive
  // queues only its peer writes: a peer killed in the middle of writing into
  // a shared-memory queue then stalls only itself (docs/transport.md, "A
  // worker per peer"). Off: every connection shares the main worker.
  bool worker_per_peer = true;
};
Result<std::unique_ptr<Transport>> make_ucx_transport(const UcxOptions& options = {});

// In-process transport for unit tests: listen() registers a name (any
// "host:port" string), connect() in the same Transport object reaches it.
// Of the receive limits it enforces max_header (messages never wait out of
// order in process).
std::unique_ptr<Transport> make_inproc_transport();

}  // namespace rgpu::transport
