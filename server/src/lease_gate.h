// Pool mode's admission check (rgpud --pool): a session must present a
// lease that rgpu-pool signed for this server; the gate verifies it and says
// exactly which slices, memory and share it grants here. The pool's
// implementation is in pool_gate.h; this header stays free of it, for the
// handshake's tests and fuzzer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::server {

// One device line of a lease that names this server, in the pool's terms:
// slice 0 of a device without configured slices is the whole device.
struct LeasedSlice {
  uint32_t device = 0;
  uint32_t slice = 0;
  uint64_t memory_bytes = 0;
  float share = 0;
};

struct LeaseGrant {
  uint64_t id = 0;
  std::string tenant;  // whom the pool granted it to; only that tenant's session may present it
  std::vector<LeasedSlice> slices;
};

// Interface, so the handshake's tests and fuzzer need no keys or clocks.
class LeaseGate {
 public:
  virtual ~LeaseGate() = default;
  // The grant of `token` on this server, or an error saying which check
  // failed (signature, form, expiry, replay, another server's lease).
  virtual Result<LeaseGrant> check(std::string_view token) = 0;
};

}  // namespace rgpu::server
