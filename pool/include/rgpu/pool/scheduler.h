// The pool's scheduler: which slices of which servers each request gets,
// who waits, who goes next, and which leases end when a server goes away.
// No networking, no threads, no wall clock of its own: the service and the
// simulator drive the same object. docs/pool.md explains the policies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/clock.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool {

// Why the pool ended a lease its holder did not release.
enum class EndReason {
  kServerLost,        // the server missed its heartbeats or left
  kServerRestarted,   // the server registered again; its sessions are gone
  kPreempted,         // a request of higher priority needed the slices
  kExpired,           // the lease was not renewed in time
};
const char* end_reason_name(EndReason reason);

struct Grant {
  TicketId ticket = 0;
  Lease lease;
  Millis waited_ms = 0;  // time in the queue (0 when placed at once)
};

struct EndedLease {
  Lease lease;
  EndReason reason = EndReason::kServerLost;
};

// What a call changed, for the service to tell clients: requests placed
// (perhaps ones queued long ago), queued requests that timed out, and leases
// the pool ended. Every mutating call returns one.
struct Changes {
  std::vector<Grant> granted;
  std::vector<TicketId> timed_out;
  std::vector<EndedLease> ended;
};

struct Submitted {
  TicketId ticket = 0;
  Changes changes;  // holds this ticket's grant when it was placed at once
};

// Where a queued request stands: how many queued requests are ahead of it
// (higher priority, or equal priority and older), and since when it waits.
struct QueuePosition {
  size_t ahead = 0;
  Millis since = 0;
  // Why it waits, in words for its client: what it asked, what is free of
  // what the pool has, where it stands ("2 devices of kind nvidia asked,
  // 0 free of 4; position 3; recent leases lasted ~40 s").
  std::string why;
};

struct TenantUse {
  std::string tenant;
  double weight = 1.0;
  double held_devices = 0.0;  // device-equivalents held (see docs/pool.md)
  size_t queued = 0;
};

struct PoolStats {
  size_t servers = 0;
  size_t devices = 0;
  size_t leases = 0;
  size_t queued = 0;
  double capacity_devices = 0.0;  // device-equivalents the pool has
  double held_devices = 0.0;      // device-equivalents leased
  std::vector<TenantUse> tenants;
};

// One waiting request, for status views.
struct QueuedView {
  TicketId ticket = 0;
  Request request;
  Millis since = 0;
  Millis deadline = 0;  // 0: waits until placed or cancelled
  std::string why;      // as QueuePosition::why
};

// One server as the scheduler sees it, for status views.
struct ServerView {
  ServerInfo info;
  std::vector<DeviceUse> use;
  Millis last_heartbeat = 0;
  size_t leases = 0;
};

// Thread-compatible: one call at a time (the service holds its own mutex
// around every call). Deterministic: the same calls at the same clock times
// give the same placements. The clock must outlive the scheduler.
class Scheduler {
 public:
  Scheduler(PoolConfig config, const Clock& clock);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const PoolConfig& config() const;

  // Adds a server, or replaces one with the same id (its leases end with
  // kServerRestarted). Counts as its first heartbeat. Waiting requests that
  // now fit are placed.
  Result<Changes> register_server(ServerInfo server);
  // Records a server's reported use and that it is alive.
  Result<Changes> heartbeat(std::string_view server_id, const std::vector<DeviceUse>& use);
  // A server leaving on purpose: its leases end with kServerLost.
  Result<Changes> remove_server(std::string_view server_id);

  // Places the request now, or queues it. With preemption on, a request that
  // does not fit may end leases of lower priority (listed in changes.ended).
  // A request no registered server could give even with every lease ended
  // (kind, compute capability, memory, share, device count) is refused at
  // once, naming what was asked and what the pool has; with no server
  // registered yet it waits.
  Result<Submitted> submit(Request request);
  // Withdraws a queued request.
  Status cancel(TicketId ticket);
  // Gives back a lease's slices; waiting requests that now fit are placed
  // at once, in priority order and by fair share.
  Result<Changes> release(LeaseId lease);
  // Extends a lease by the configured lease time from now.
  Result<Lease> renew(LeaseId lease);

  // Ends what time has ended: servers silent past the heartbeat timeout,
  // queued requests past their timeout, leases past their expiry. Call it
  // about once a heartbeat interval (or before reading state).
  Changes tick();

  std::optional<QueuePosition> position(TicketId ticket) const;
  std::optional<Lease> lease(LeaseId lease) const;
  std::vector<Lease> leases() const;
  std::vector<ServerView> servers() const;
  // The waiting requests, in the order a drain considers them per tenant:
  // by priority (highest first), then ticket (oldest first).
  std::vector<QueuedView> queue() const;
  PoolStats stats() const;

  // --- several pool instances sharing one state (docs/pool.md, "Several
  // pool instances on etcd"); a single instance never calls these. ---

  // Leases granted from now on get ids first, first + 1, ...: instances
  // that share a pool use disjoint ranges, so every id names one lease.
  void set_next_lease_id(LeaseId first);
  // Holds the slices of a lease another instance granted, as its placement
  // names them, without placing anything; for a lease already held, takes
  // its (renewed) expiry. An error when a server, device or slice is
  // unknown or lacks the room, and then nothing changes.
  Status adopt(const Lease& lease);
  // Takes back a grant that could not be made durable (another instance
  // took the slices first) and puts `request` back in the queue under its
  // ticket, waiting since `since`. Places nothing.
  Status requeue(LeaseId lease, TicketId ticket, Request request, Millis since);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace rgpu::pool
