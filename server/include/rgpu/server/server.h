// rgpud's server object: listens, accepts clients, runs one Session per client.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/common/metrics.h"
#include "rgpu/common/status.h"
#include "rgpu/protocol/auth.h"
#include "rgpu/protocol/negotiation.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/transport/transport.h"

namespace rgpu::server {

// What one client may make the server hold, and what a connection may send
// before it has authenticated. Each bound is answered with an error for that
// client (a refused connection, a failed call, a closed session), never with
// a crash or a stall for others. Defaults are for a shared server; see
// docs/security.md, "Limits".
struct ServerLimits {
  // Before authentication: the time to finish the handshake, the size of a
  // handshake message, and how many connections may be at it at once.
  std::chrono::milliseconds hello_timeout{5000};
  size_t max_hello_bytes = 16 * 1024;
  size_t max_unauthenticated = 64;
  size_t max_sessions = 1024;
  // Before that, at the transport: connections that have not sent its
  // hello, in all and from one address (transport::UcxOptions::
  // max_accepting); 0 here: rgpud sizes them by its descriptor limit.
  size_t max_accepting = 0;
  size_t max_accepting_per_source = 0;
  // After: the size of one message header (bulk bytes travel beside it), and
  // the frames and bytes the transport may hold out of order for a session.
  size_t max_message_bytes = size_t{64} << 20;
  uint64_t max_parked_frames = 4096;
  uint64_t max_parked_bytes = uint64_t{256} << 20;
  // Per session: handles of every kind (contexts, streams, events, modules,
  // functions), the bytes of one module image, and the host bytes the server
  // holds for the session's copies in flight (past them a copy waits for
  // room; one larger fails with CUDA_ERROR_OUT_OF_MEMORY).
  size_t max_handles = 65536;
  uint64_t max_module_bytes = uint64_t{512} << 20;
  uint64_t max_inflight_bytes = uint64_t{1} << 30;
  // Per session: waits and copy completions registered with the device's
  // poller at once. Past it a wait runs on the session's executor (the
  // client is served one at a time) and an async device-to-host copy fails
  // with CUDA_ERROR_OUT_OF_MEMORY.
  size_t max_session_waits = 4096;
  // Per session: how long a reply's bulk bytes may wait for the client to
  // take them. A client that stops reading holds back its own session only
  // (its copies wait once their bytes reach max_inflight_bytes); past this
  // its session is ended and its memory freed.
  std::chrono::milliseconds reply_timeout{60000};
};

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  // The keys clients prove, by tenant; empty: no authentication (only
  // allowed on a loopback address unless `insecure`).
  protocol::auth::KeyRing keys;
  bool insecure = false;
  // The key of operator requests (rgpu session ...; --admin-key-file);
  // none: they are refused.
  std::optional<std::string> admin_key;
  // Per-message integrity after the handshake (--integrity): by default
  // every session from another host is sealed; it needs keys.
  protocol::IntegrityMode integrity = protocol::IntegrityMode::kAuto;
  // Folder that keeps module images across restarts (empty: memory only),
  // and the bytes of images kept in memory.
  std::string module_cache_dir;
  uint64_t module_cache_memory = uint64_t{1} << 30;
  ServerLimits limits;
  // Threads of each device's completion poller, which finishes every
  // session's waits and deferred copies on that device (--poller-threads).
  size_t poller_threads = 2;
  // The most device memory one session may hold on each device, in bytes
  // (--session-memory); a session's own request may be smaller. 0: no limit.
  uint64_t session_memory = 0;
  // A file per remoted library name ("cublas") that rgpud loads instead of
  // NVIDIA's library or rgpu's CPU stand-in (--library NAME=PATH).
  std::map<std::string, std::string> libraries;
  // Cuts of devices into slices, each "DEV:SIZE@SHARE[,SIZE@SHARE...]"
  // (--slices; docs/sharing.md). A device without cuts is one whole slice.
  std::vector<std::string> slices;
  // Sessions one slice may hold at once (--max-sessions-per-slice); 0: one
  // per configured slice, any number on a whole device.
  uint32_t max_sessions_per_slice = 0;
  // Pool mode (rgpud --pool, docs/pool.md): the key rgpu-pool signs leases
  // with. Non-empty: every session must present a lease the pool signed for
  // `pool_id` (empty: the bound address), and gets exactly its slices.
  std::string pool_key;
  std::string pool_id;
  // Called with a lease's id when a session admitted on it has ended (on a
  // transport or reaper thread), so the pool frees the lease at once.
  std::function<void(uint64_t lease)> on_lease_session_end;
  // Where the server records its metrics (docs/metrics.md); null: none. Not
  // owned: it must outlive the server.
  metrics::Registry* metrics = nullptr;
};

// One device as a pool sees it: what it is, how it is cut, and what it is
// using. `slices` empty: an uncut device (the pool's slice 0, whole).
struct PoolSlice {
  uint64_t memory = 0;
  float share = 1;
  uint32_t max_sessions = 0;  // 0: any number
};
struct PoolDevice {
  uint32_t index = 0;
  std::string name;
  bool cpu = false;             // rgpu's CPU device
  uint32_t compute_capability = 0;  // major * 10 + minor
  uint64_t memory = 0;
  std::vector<PoolSlice> slices;
  uint64_t memory_reserved = 0;  // the quotas of the sessions on it
  double utilization = 0;        // 0..1, as the driver reports it (0 when it cannot)
};

// Owns the listener and every live session. Thread-safe. Destruction closes
// all sessions and frees everything they held on the device.
class Server {
 public:
  virtual ~Server() = default;
  // The bound address, "host:port".
  virtual std::string address() const = 0;
  virtual size_t session_count() const = 0;
  // Connections that have not finished their handshake yet.
  virtual size_t pending_count() const = 0;
  // Pool mode: the id leases must name, the devices and their use.
  virtual std::string pool_id() const = 0;
  virtual std::vector<PoolDevice> pool_devices() const = 0;
  // Ends every session admitted on `lease`, telling its client why.
  virtual void end_lease(uint64_t lease, const std::string& why) = 0;

  // Initialises the driver (cuInit, device queries) and starts listening.
  static Result<std::unique_ptr<Server>> start(std::shared_ptr<const DriverTable> driver,
                                               std::shared_ptr<transport::Transport> transport,
                                               const ServerOptions& options);
};

}  // namespace rgpu::server
