# rgpu pool protocol: the messages between rgpu-pool and its peers (rgpud
# servers, clients, `rgpu pool status`).
@0xc1f3a7b2d4e59608;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("rgpu::poolwire");

# ---------------------------------------------------------------------------
# Wire model
#
# The control plane runs over plain TCP: a few messages a second per server
# (a heartbeat) and a few per client run (a request, a grant, a release),
# nowhere near what needs UCX. TCP is everywhere, needs no registration of
# memory, and its close tells the pool at once that a peer went away. The
# data plane (the sessions' calls and copies) stays on UCX.
#
# A frame is a 4-byte little-endian length followed by that many bytes: one
# Cap'n Proto message (unpacked, flat-array framing) whose root is
# `PoolMessage`. A reader refuses a length over its cap before reading the
# body, and reads the message with a traversal limit (docs/pool.md).
#
# Conversations:
# 1. rgpud: `register` (its id, a boot id, the address clients use, its
#    devices and slices); the pool answers `registered` (the heartbeat
#    interval it wants). Then `heartbeat` every interval and `sessionEnded`
#    the moment a session holding a lease ends. The pool sends `endSession`
#    when a lease ends (release, preemption, expiry): its sessions stop and
#    the server refuses it from then on. `register` proves the pool's key.
#    A heartbeat from a server the pool does not know is answered with an
#    `error` of code `unknownServer`; rgpud then registers again.
# 2. A client: `submit` (what it wants); the pool answers `granted` (the
#    lease token and its placement) or `queued` (where it stands), then
#    `queued` again about once a second while it waits, then `granted` or
#    `error` (`timedOut`). The client keeps the connection while it uses the
#    lease and sends `release` when done; a closed connection releases its
#    leases and withdraws its requests. `leaseEnded` tells it that the pool
#    ended its lease (and why).
# 3. Anyone: `statusQuery`; the pool answers `status`.
#
# Every field is checked by the pool before use; anything malformed is
# answered with `error` (code `badRequest`) and the connection closed.
# Ordinals are append-only.

struct PoolMessage {
  union {
    register @0 :Register;
    heartbeat @1 :Heartbeat;
    sessionEnded @2 :UInt64;    # a lease id: its session on this server ended
    submit @3 :Request;
    release @4 :UInt64;         # a lease id the client holds
    statusQuery @5 :Void;
    error @6 :Error;
    registered @7 :Registered;
    queued @8 :Queued;
    granted @9 :Granted;
    endSession @10 :LeaseEnd;   # pool to rgpud: end the sessions of this lease
    leaseEnded @11 :LeaseEnd;   # pool to client: the pool ended your lease
    status @12 :Status;
    historyQuery @13 :HistoryQuery;
    history @14 :HistoryReply;
  }
}

# `rgpu pool report --pool`: the usage history a pool keeps (--history or
# [history] in pool.toml), as the lines of its history file (docs/pool.md,
# "Usage history"). The report is computed by the asker.
struct HistoryQuery {
  sinceMs @0 :Int64;            # the window wanted, ending at the last event; 0: all
}

struct HistoryReply {
  kept @0 :Bool;                # false: this pool keeps no history (lines empty)
  lines @1 :List(Text);         # one event per line, oldest first
  truncated @2 :Bool;           # the oldest lines were left out to bound the reply
}

struct Slice {
  id @0 :UInt32;
  memoryBytes @1 :UInt64;
  shareUnits @2 :UInt32;        # of 10000
  maxSessions @3 :UInt32;       # 0: any number
}

struct Device {
  index @0 :UInt32;
  kind @1 :Text;                # "cpu" or the NVIDIA model name
  computeCapability @2 :UInt32; # major * 10 + minor
  memoryBytes @3 :UInt64;
  slices @4 :List(Slice);       # empty: one whole slice (id 0), any sessions
}

struct Register {
  id @0 :Text;
  address @1 :Text;             # host:port clients connect to
  devices @2 :List(Device);
  bootId @3 :UInt64;            # random per rgpud start: same id, same boot is a reconnect
  # The server's proof that it holds the key the pool signs leases with:
  # HMAC-SHA256 under it of the fields above and timeMs, the server's wall
  # clock when it sent this (docs/pool.md, "Servers prove the key"). The
  # pool refuses a registration without a valid, fresh proof.
  timeMs @4 :Int64;
  proof @5 :Data;
}

struct DeviceUse {
  index @0 :UInt32;
  memoryUsedBytes @1 :UInt64;
  utilization @2 :Float32;      # 0..1
}

struct Heartbeat {
  use @0 :List(DeviceUse);
  sessions @1 :UInt32;
}

struct Request {
  devices @0 :UInt32;
  memoryBytes @1 :UInt64;       # per device; 0: whole slices
  shareUnits @2 :UInt32;        # per device, of 10000; 0: none asked
  kind @3 :Text;                # nvidia | cpu | any
  minComputeCapability @4 :UInt32;
  priority @5 :Int32;
  tenant @6 :Text;
  timeoutMs @7 :Int64;          # 0: the pool's default
  program @8 :Text;             # for status views
  hostname @9 :Text;
  # The client's proof of its tenant's key, required by a pool with tenant
  # keys (rgpu-pool --auth-file): its wall-clock time, a fresh nonce (hex)
  # and an HMAC over every field above with them (request_proof,
  # pool/include/rgpu/pool/lease_token.h; docs/pool.md, "Clients prove
  # their tenant").
  timeMs @10 :Int64;
  nonce @11 :Text;
  proof @12 :Text;
}

struct Error {
  code @0 :Code;
  message @1 :Text;
  enum Code {
    badRequest @0;
    unknownServer @1;
    timedOut @2;
    refused @3;
    internal @4;
  }
}

struct Registered {
  heartbeatIntervalMs @0 :Int64;
}

struct Queued {
  ticket @0 :UInt64;
  ahead @1 :UInt32;
  waitedMs @2 :Int64;
  why @3 :Text;  # what it asked, what is free of what the pool has, where it stands
}

struct PlacedDevice {
  serverId @0 :Text;
  address @1 :Text;
  device @2 :UInt32;
  slice @3 :UInt32;
  memoryBytes @4 :UInt64;
  shareUnits @5 :UInt32;
}

struct Granted {
  leaseId @0 :UInt64;
  token @1 :Text;
  placement @2 :List(PlacedDevice);
  waitedMs @3 :Int64;
  expiry @4 :Int64;
}

struct LeaseEnd {
  leaseId @0 :UInt64;
  reason @1 :Text;              # preempted | server_lost | server_restarted | expired
  # An order to a server (endSession) is signed by the pool: the server it
  # is for, the pool's wall-clock time and an HMAC-SHA256 under the pool's
  # key over them, the lease and the reason (end_session_proof,
  # pool/include/rgpu/pool/lease_token.h). rgpud ignores, and logs, an
  # order without a valid, fresh proof.
  serverId @2 :Text;
  timeMs @3 :Int64;
  proof @4 :Text;
}

struct Status {
  servers @0 :List(ServerStatus);
  leases @1 :List(LeaseStatus);
  queue @2 :List(QueuedStatus);
  nowMs @3 :Int64;
}

struct ServerStatus {
  id @0 :Text;
  address @1 :Text;
  devices @2 :List(Device);
  use @3 :List(DeviceUse);
  sessions @4 :UInt32;
  lastHeartbeatMs @5 :Int64;
  leases @6 :UInt32;
}

struct LeaseStatus {
  id @0 :UInt64;
  tenant @1 :Text;
  priority @2 :Int32;
  placement @3 :List(PlacedDevice);
  issuedMs @4 :Int64;
  expiryMs @5 :Int64;
  program @6 :Text;
  hostname @7 :Text;
}

struct QueuedStatus {
  ticket @0 :UInt64;
  request @1 :Request;
  sinceMs @2 :Int64;
  deadlineMs @3 :Int64;
  why @4 :Text;  # as Queued.why
}
