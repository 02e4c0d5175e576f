// What rgpu-pool shows at /metrics (docs/metrics.md, "rgpu-pool"): counts of
// what the scheduler did, recorded from each call's Changes, and the state
// it is in (queue, leases, servers, devices), set from the event loop.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rgpu/common/metrics.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::service {

// Thread-compatible: the service's event loop calls it (the registry's
// series are what the scraping thread reads, lock-free).
class PoolMetrics {
 public:
  explicit PoolMetrics(metrics::Registry& registry);
  // Counts a call's outcome: placements and their queue waits, requests
  // that timed out, leases the pool ended.
  void observe(const Changes& changes);
  // Sets the state gauges from the scheduler's views.
  void refresh(const std::vector<QueuedView>& queue, const std::vector<Lease>& leases,
               const std::vector<ServerView>& servers);

 private:
  // Sets one gauge per key of `values`; keys seen before and absent now are
  // removed, so a tenant or device that went away leaves no stale series.
  void set_all(metrics::Family<metrics::Gauge>& family, const std::map<metrics::LabelValues, double>& values,
               std::set<metrics::LabelValues>* shown);

  metrics::Family<metrics::Counter>& placements_;
  metrics::Family<metrics::Histogram>& wait_;
  metrics::Counter& timeouts_;
  metrics::Family<metrics::Counter>& ended_;
  metrics::Family<metrics::Gauge>& queue_;
  metrics::Family<metrics::Gauge>& leases_;
  metrics::Family<metrics::Gauge>& leased_devices_;
  metrics::Gauge& servers_;
  metrics::Family<metrics::Gauge>& device_memory_;
  metrics::Family<metrics::Gauge>& device_used_;
  metrics::Family<metrics::Gauge>& device_utilization_;
  std::set<metrics::LabelValues> queue_shown_, leases_shown_, leased_shown_, memory_shown_, used_shown_,
      utilization_shown_;
};

}  // namespace rgpu::pool::service
