// A client of rgpu-pool: ask for devices, wait in the queue, hold the lease
// while the program runs, release it; and read the pool's status. Used by
// the client library (RGPU_POOL) and by `rgpu run --pool` / `rgpu pool status`.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"
#include "rgpu/pool/net.h"

namespace rgpu::pool::client {

// A granted lease and the connection that holds it: the pool keeps the
// lease while the connection is open (and renews it), and releases it when
// the connection closes. Not thread-safe; owned by one holder.
struct Held {
  LeaseId id = 0;
  std::string token;
  Placement placement;
  Millis waited_ms = 0;
  std::unique_ptr<net::Channel> channel;
};

// Where a waiting request stands, as the pool says.
struct QueueNotice {
  uint32_t ahead = 0;  // requests before it
  Millis waited_ms = 0;
  // What it asked, what is free of what the pool has, where it stands; empty
  // from a pool that does not say.
  std::string why;
};

struct AcquireOptions {
  std::vector<std::string> pool;  // addresses of pool instances, tried in order
  Request request;
  std::string program;
  std::string hostname;
  // The tenant's key (secret_from_environment): proves the request to a
  // pool with tenant keys; it never travels. Empty: the request is not
  // signed, which only a pool without tenant keys accepts.
  std::string secret;
  std::chrono::milliseconds connect_timeout{5000};
  // Called when the request waits, and about once a second while it does.
  std::function<void(const QueueNotice&)> on_queued;
};

// Submits the request and waits for its grant. A request that waits past its
// timeout (request.timeout_ms, or the pool's default) fails with kFailed
// naming the timeout; a refusal is kInvalidArgument; a lost pool is
// kDisconnected.
Result<Held> acquire(const AcquireOptions& options);

// Gives the lease back (also what closing the connection does).
void release(Held& held);

// Whether the pool ended the lease (preemption, a lost server): its reason,
// or nothing. Does not wait.
std::optional<std::string> ended(Held& held);

// The distinct server addresses of a placement, in order, comma-separated:
// the RGPU_SERVER for the lease.
std::string server_list(const Placement& placement);

// The request RGPU_REQUEST and the RGPU_POOL_* variables describe
// (docs/pool.md, "Clients"): devices, mem and share from RGPU_REQUEST,
// RGPU_POOL_KIND, RGPU_POOL_MIN_CC, RGPU_POOL_PRIORITY, RGPU_TENANT and
// RGPU_POOL_TIMEOUT (seconds). A malformed value is an error naming it.
Status request_from_environment(Request* request);
// The tenant's key from RGPU_AUTH_TOKEN_FILE (a private file) or
// RGPU_AUTH_TOKEN, as the client proves it to rgpud; empty when neither is
// set. A bad file or value is an error naming it.
Result<std::string> secret_from_environment();
// "9.0" into 90; an error for anything else.
Result<uint32_t> parse_compute_capability(const std::string& text);

// The one progress line a waiting client prints on stderr: rewritten in
// place on a terminal, printed when the reason or position changes
// otherwise.
std::function<void(const QueueNotice&)> stderr_progress(const std::string& who);

// The pool's status reply (PoolMessage.status).
Result<net::Message> query_status(const std::vector<std::string>& pool, std::chrono::milliseconds timeout);
// The pool's usage history for a report of the last `since_ms` (0: all):
// its reply (PoolMessage.history), for `rgpu pool report --pool`.
Result<net::Message> query_history(const std::vector<std::string>& pool, Millis since_ms,
                                   std::chrono::milliseconds timeout);

}  // namespace rgpu::pool::client
