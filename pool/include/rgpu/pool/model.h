// What the pool knows and hands out: servers with their devices and slices,
// requests for devices, placements and leases. Plain values; see
// docs/pool.md for the meaning of each field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::pool {

// Milliseconds since the Unix epoch (or since the start of a simulation): the
// pool's one unit of time, so that leases carry wall time that servers check.
using Millis = int64_t;

// Compute shares are kept as whole units of 1/10000 of a device, so that
// sums of shares are exact and placements do not depend on rounding.
constexpr uint32_t kShareUnits = 10000;
uint32_t share_to_units(double share);
double units_to_share(uint32_t units);

// A slice of a device, as rgpud cuts it (`--slices DEV:SIZE@SHARE`): a
// memory quota, a compute share (0 < share <= 1 of the device) and how many
// sessions may hold it at once (0: no limit).
struct Slice {
  uint32_t id = 0;  // unique on its device
  uint64_t memory_bytes = 0;
  double share = 1.0;
  uint32_t max_sessions = 1;
};

// A device of a server. `kind` is "cpu" for rgpu's CPU device, otherwise the
// NVIDIA model name ("NVIDIA H100 80GB HBM3"). A device without slices is
// offered as rgpud serves it: one slice of all its memory and compute, for
// any number of sessions (slice id 0).
struct Device {
  uint32_t index = 0;  // the server's own device number
  std::string kind;
  uint32_t compute_capability = 0;  // major * 10 + minor: 90 for 9.0
  uint64_t memory_bytes = 0;
  std::vector<Slice> slices;

  bool is_cpu() const { return kind == "cpu"; }
};

// A server as it registers: a stable id (one per rgpud), the address clients
// connect to, and its devices.
struct ServerInfo {
  std::string id;
  std::string address;
  std::vector<Device> devices;
};

// What a heartbeat reports for one device.
struct DeviceUse {
  uint32_t index = 0;
  uint64_t memory_used_bytes = 0;
  double utilization = 0.0;  // 0..1 over the last interval
};

// Which devices a request accepts.
enum class KindWanted { kNvidia, kCpu, kAny };
const char* kind_wanted_name(KindWanted kind);
Result<KindWanted> parse_kind_wanted(std::string_view text);

// Priorities are integers, larger first; these are the named ones.
constexpr int32_t kPriorityLow = 0;
constexpr int32_t kPriorityNormal = 10;
constexpr int32_t kPriorityHigh = 20;
// "low", "normal", "high" or a whole number in [-1000, 1000].
Result<int32_t> parse_priority(std::string_view text);

// A request for devices. `memory_bytes` is per device; 0 asks for whole
// slices (a slice no one else holds, all of its memory and share). `share`
// is the compute share wanted on each device, 0 when none is asked for.
// `timeout_ms` bounds the wait in the queue; 0 takes the pool's default.
struct Request {
  uint32_t devices = 1;
  uint64_t memory_bytes = 0;
  double share = 0.0;
  KindWanted kind = KindWanted::kNvidia;
  uint32_t min_compute_capability = 0;
  int32_t priority = kPriorityNormal;
  std::string tenant = "default";
  Millis timeout_ms = 0;
};

// Limits on a request, checked before it is queued: a request is input from
// a client and a bad one is an error, never an assert.
constexpr uint32_t kMaxDevicesPerRequest = 64;
constexpr size_t kMaxTenantName = 64;
Status validate(const Request& request);
// Checks a registration: a non-empty printable id, unique device indices,
// unique slice ids per device, slices that fit their device.
Status validate(const ServerInfo& server);

// One device of a placement: which slice of which server, and what of it is
// reserved for the lease.
struct PlacedDevice {
  std::string server_id;
  std::string address;
  uint32_t device = 0;
  uint32_t slice = 0;
  uint64_t memory_bytes = 0;
  double share = 0.0;
};

using Placement = std::vector<PlacedDevice>;
using LeaseId = uint64_t;
using TicketId = uint64_t;

// A grant of a placement to a tenant, valid from `issued` until `expiry`
// unless renewed. `nonce` is filled in when the lease is signed.
struct Lease {
  LeaseId id = 0;
  std::string tenant;
  int32_t priority = kPriorityNormal;
  Placement placement;
  Millis issued = 0;
  Millis expiry = 0;
  std::string nonce;
};

}  // namespace rgpu::pool
