// The client's connection to one rgpud: the transport connection, the
// handshake, and the receive side (replies to their waiters, async
// device-to-host copies into their buffers, host function turns and device
// output handed up). Batching and everything else above it is Client's.
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/admin.h"
#include "rgpu/protocol/device.h"
#include "rgpu/protocol/negotiation.h"
#include "rgpu/transport/transport.h"

namespace rgpu::shim {

// A device of the server (the welcome's description) and what the server
// calls it: its index in the welcome. Every call that names a device sends
// that, never the program's ordinal.
struct DeviceInfo : protocol::DeviceDescription {
  int server_ordinal = 0;
};

// Resources as the client asks for them (zero: no preference) or as the
// session was granted them (zero: no limit). See docs/protocol.md.
struct Resources {
  uint32_t devices = 0;
  uint64_t memory_bytes = 0;
  uint32_t lease_seconds = 0;
  std::string lease;  // opaque, issued by a pool
  float share = 0;    // compute share of each device (0: none asked / a whole device)
};

struct ConnectionOptions {
  std::string server;  // host:port
  // The tenant and its secret; with a secret the server must prove it too.
  std::string tenant;
  std::string auth_token;
  std::chrono::milliseconds connect_timeout{5000};
  Resources request;
  // What the hello says this side speaks (tests narrow or widen them).
  protocol::VersionRange versions = protocol::kBuildVersions;
  uint64_t features = protocol::kBuildFeatures;
  // kOn insists on per-message integrity (RGPU_INTEGRITY=on); otherwise the
  // server decides (rgpud --integrity).
  protocol::IntegrityMode integrity = protocol::IntegrityMode::kAuto;
  // An operator's request instead of a session (rgpu session ...):
  // `auth_token` is then the admin key, the welcome carries the answer
  // (SessionInfo::listed) and the connection is good for nothing more.
  std::optional<protocol::AdminRequest> admin;
};

// What the welcome said about the session.
struct SessionInfo {
  uint64_t session_id = 0;
  std::string server_build;
  std::string tenant;
  uint32_t protocol_version = 0;          // what the session runs at
  protocol::VersionRange server_versions;  // what the server speaks
  uint64_t features = 0;                  // the features both sides have
  bool sealed = false;                    // every message carries integrity tags
  Resources granted;
  int driver_version = 0;
  uint64_t copy_pipeline_chunk = 0;  // the server's advice (Welcome.copyPipelineChunk)
  std::vector<DeviceInfo> devices;
  // The answer to ConnectionOptions::admin: every session (kListSessions),
  // the one ended (kEndSession).
  std::vector<protocol::SessionSummary> listed;
};

// A reply as it arrived: the decoded header reads from `message`, whose
// payload (large device-to-host data) may still be at the sender.
struct ArrivedReply {
  transport::Message message;
  std::unique_ptr<protocol::Decoded> decoded;
  wire::Reply::Reader reply() const { return decoded->envelope().getReply(); }
};

// One session's connection. Thread-safe: any thread may send, wait for a
// reply or for copy-outs. What it hands up (Events) runs on the transport's
// thread, or on a thread polling for its reply, one message at a time, and
// never once the destructor has returned, even when the transport outlives
// this object and reports the close later. Destroy it only when no other
// thread is inside it; destruction closes the connection (the server then
// frees everything the session held).
class Connection {
 public:
  struct Events {
    // HostFuncCall: the stream waits for it; `bytes` those a host step's copy brings.
    std::function<void(uint64_t id, std::vector<std::byte> bytes)> host_func_call;
    std::function<void(std::string_view text)> device_output;  // device printf text
    std::function<void(std::string_view text)> device_error;   // failed device asserts' messages
  };

  // Connects over `transport` and completes the handshake.
  static Result<std::unique_ptr<Connection>> open(const ConnectionOptions& options,
                                                  std::shared_ptr<transport::Transport> transport, Events events);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const SessionInfo& session() const { return session_; }
  const std::shared_ptr<transport::Connection>& transport_connection() const { return connection_; }

  // As transport::Connection; a failed send fails the connection.
  Status send(transport::Bytes header, transport::Bytes payload = {});
  Status send_then(transport::Bytes header, transport::Bytes payload, const std::function<void()>& on_posted);
  // True once the connection is lost (never again usable).
  bool failed() const;
  // Why rgpud ended the session, when it said so (empty otherwise).
  std::string ended_reason() const;

  // Registers interest in the reply to call `id`; call before sending it.
  void expect_reply(uint64_t id);
  // Waits for the reply to `id` (polling the transport on this thread for
  // `poll_budget` first); empty when the connection failed first.
  std::optional<ArrivedReply> wait_reply(uint64_t id, std::chrono::microseconds poll_budget);

  // Registers async copy-out `id`: its CopyDone writes `size` bytes to `dst`.
  // Call before sending it.
  void expect_copy_out(uint64_t id, void* dst, uint64_t size, uint64_t stream);
  // Waits until every copy-out registered before now (on `stream`, or any
  // when `stream` is kAnyStream) has landed; forgets the landed ones and
  // returns the first error among them.
  CUresult wait_copy_outs(uint64_t stream);
  bool copy_outs_pending(uint64_t stream);
  // Waits until copy-outs registered before call `id` on `stream` (any, for
  // the NULL and legacy streams) have landed.
  void wait_copy_outs_before(uint64_t id, uint64_t stream);

  static constexpr uint64_t kAnyStream = ~uint64_t{0};

 private:
  struct Inbox;
  Connection() = default;
  Status handshake(const ConnectionOptions& options);

  std::shared_ptr<transport::Transport> transport_;
  std::shared_ptr<transport::Connection> connection_;
  // Shared with the transport's handlers (detached when this goes).
  std::shared_ptr<Inbox> inbox_;
  SessionInfo session_;
};

}  // namespace rgpu::shim
