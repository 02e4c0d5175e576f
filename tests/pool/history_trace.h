// A day of a small pool, for the usage history's and the report's tests:
// the real Scheduler on a ManualClock, three tenants whose work follows the
// day, and heartbeats whose utilization is each lease's part of its device
// times its tenant's known busy ratio, so the report's answer is known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rgpu/pool/history.h"

namespace rgpu::pool::testing {

struct TraceTenant {
  std::string name;
  double busy_ratio;  // of what it leases, how much its work keeps busy
};
// inference 0.3 (day, shared devices), training 0.9 (night, whole
// devices), research 0.6 (any kind, bursts).
const std::vector<TraceTenant>& trace_tenants();

struct TraceOptions {
  int hours = 24;
  uint64_t seed = 1;
  Millis start = 1'767'225'600'000;  // 2026-01-01 00:00 UTC
};

// Runs the trace, recording into `history` (whose heartbeat and sample
// intervals should be one minute, the trace's step).
void run_day_trace(History& history, const TraceOptions& options = {});

}  // namespace rgpu::pool::testing
