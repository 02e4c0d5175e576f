// Private to the scheduler: a server's devices and slices with what is
// free on each, and the fit of a request on one server.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "rgpu/pool/config.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool::detail {

struct SliceState {
  Slice spec;
  uint32_t share_units = 0;  // spec.share in units
  uint64_t free_memory = 0;
  uint32_t free_share = 0;
  uint32_t sessions = 0;

  bool has_session_left() const { return spec.max_sessions == 0 || sessions < spec.max_sessions; }
};

struct DeviceState {
  Device spec;  // spec.slices is left empty; `slices` holds them
  std::vector<SliceState> slices;
  uint64_t leased_memory = 0;
  DeviceUse use;

  bool cpu() const { return spec.is_cpu(); }
  // Whether any slice could take one more lease of some size.
  bool open() const;
};

struct ServerState {
  std::string id;
  std::string address;
  std::vector<DeviceState> devices;
  Millis last_heartbeat = 0;
  std::set<LeaseId> leases;
  uint64_t total_memory = 0;
  uint64_t leased_memory = 0;
  // Where the server sits in the scheduler's indexes (class 0: NVIDIA
  // devices, class 1: CPU devices), so it can be taken out again.
  int64_t key = 0;
  bool indexed[2] = {false, false};
  // Per device class: devices with a slice that can take another lease,
  // devices with a slice no lease holds, and the highest compute
  // capability. Kept by summarize(); they let placement skip a server
  // without looking at its devices.
  uint32_t open_devices[2] = {0, 0};
  uint32_t idle_devices[2] = {0, 0};
  uint32_t max_cc[2] = {0, 0};
  // The most free memory and share any one slice with a session left has.
  uint64_t max_free_memory[2] = {0, 0};
  uint32_t max_free_share[2] = {0, 0};

  // Builds the state of a freshly registered server: a device without
  // slices becomes one whole slice for one session.
  static ServerState from(const ServerInfo& info, Millis now);
  bool open(int device_class) const { return open_devices[device_class] > 0; }
  void summarize();
};

// A request reduced to what placement needs.
struct Need {
  uint32_t devices = 1;
  uint64_t memory = 0;  // per device; 0: a whole, unheld slice
  uint32_t share = 0;   // units
  bool allow_gpu = true;
  bool allow_cpu = false;
  uint32_t min_cc = 0;

  static Need from(const Request& r);
  bool whole() const { return memory == 0; }
  bool allows(const DeviceState& d) const {
    return (d.cpu() ? allow_cpu : allow_gpu) && d.spec.compute_capability >= min_cc;
  }
};

// One device of a placement before it becomes a lease.
struct Pick {
  uint32_t device = 0;  // position in ServerState::devices
  uint32_t slice = 0;   // position in DeviceState::slices
  uint64_t memory = 0;
  uint32_t share = 0;
};

// `s` as it would be with no lease held: what it could ever give.
ServerState pristine(const ServerState& s);

// At most how many devices of `s` could take `need` (an upper bound from
// the summary; fit_server gives the exact answer).
uint32_t could_fit(const ServerState& s, const Need& need);

// The slice of `d` that the policy takes for `need`, or -1 when none fits.
int pick_slice(const DeviceState& d, const Need& need, Policy policy);
// Appends to `out` up to `want` picks on distinct devices of `s`, in the
// policy's order of preference (NVIDIA devices before CPU devices).
void fit_server(const ServerState& s, const Need& need, uint32_t want, Policy policy, std::vector<Pick>* out);

// Reserving and giving back a pick's resources.
void take(ServerState& s, const Pick& p);
void give_back(ServerState& s, const Pick& p);

// The server's place in the policy's order: smaller is tried first.
int64_t index_key(const ServerState& s, Policy policy);

// Device-equivalents a pick holds, in share units: the larger of its share
// and its part of the device's memory (fair share counts these).
uint32_t pick_units(const ServerState& s, const Pick& p);

}  // namespace rgpu::pool::detail
