// PoolMetrics: the scheduler's outcomes and state as Prometheus series.
#include "pool_metrics.h"

namespace rgpu::pool::service {
namespace {

// Queue waits run from nothing to hours.
std::vector<double> wait_buckets() { return {0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400}; }

// Tenants and servers are operator-chosen and few; the cap only guards
// against a flood of made-up tenant names.
constexpr size_t kMaxSeries = 1024;

}  // namespace

PoolMetrics::PoolMetrics(metrics::Registry& r)
    : placements_(r.counter("rgpu_pool_placements_total", "Requests placed, by tenant.", {"tenant"}, metrics::FamilyOptions{kMaxSeries})),
      wait_(r.histogram("rgpu_pool_wait_seconds", "Time a placed request waited in the queue.", {"tenant"},
                        wait_buckets(), metrics::FamilyOptions{kMaxSeries})),
      timeouts_(r.counter("rgpu_pool_timeouts_total", "Queued requests that gave up waiting.", {}).with({})),
      ended_(r.counter("rgpu_pool_leases_ended_total", "Leases the pool ended, by reason.", {"reason"})),
      queue_(r.gauge("rgpu_pool_queue_length", "Requests waiting, by tenant.", {"tenant"}, metrics::FamilyOptions{kMaxSeries})),
      leases_(r.gauge("rgpu_pool_leases", "Leases held, by tenant.", {"tenant"}, metrics::FamilyOptions{kMaxSeries})),
      leased_devices_(r.gauge("rgpu_pool_leased_devices", "Devices (slices) held under leases, by tenant.",
                              {"tenant"}, metrics::FamilyOptions{kMaxSeries})),
      servers_(r.gauge("rgpu_pool_servers", "Servers registered and heartbeating.", {}).with({})),
      device_memory_(r.gauge("rgpu_pool_device_memory_bytes", "Memory of each registered device.",
                             {"server", "device", "kind"}, metrics::FamilyOptions{kMaxSeries})),
      device_used_(r.gauge("rgpu_pool_device_memory_used_bytes", "Memory in use, as the last heartbeat said.",
                           {"server", "device"}, metrics::FamilyOptions{kMaxSeries})),
      device_utilization_(r.gauge("rgpu_pool_device_utilization", "Utilization (0..1), as the last heartbeat said.",
                                  {"server", "device"}, metrics::FamilyOptions{kMaxSeries})) {}

void PoolMetrics::observe(const Changes& changes) {
  for (const Grant& g : changes.granted) {
    placements_.with({g.lease.tenant}).add();
    wait_.with({g.lease.tenant}).observe(double(g.waited_ms) / 1000.0);
  }
  if (!changes.timed_out.empty()) timeouts_.add(changes.timed_out.size());
  for (const EndedLease& e : changes.ended) ended_.with({end_reason_name(e.reason)}).add();
}

void PoolMetrics::set_all(metrics::Family<metrics::Gauge>& family,
                          const std::map<metrics::LabelValues, double>& values, std::set<metrics::LabelValues>* shown) {
  for (auto it = shown->begin(); it != shown->end();) {
    if (values.count(*it) != 0) {
      ++it;
      continue;
    }
    family.remove(*it);
    it = shown->erase(it);
  }
  for (const auto& [labels, v] : values) {
    family.with(labels).set(v);
    shown->insert(labels);
  }
}

void PoolMetrics::refresh(const std::vector<QueuedView>& queue, const std::vector<Lease>& leases,
                          const std::vector<ServerView>& servers) {
  std::map<metrics::LabelValues, double> queued, held, devices, memory, used, utilization;
  for (const QueuedView& q : queue) queued[{q.request.tenant}] += 1;
  for (const Lease& l : leases) {
    held[{l.tenant}] += 1;
    devices[{l.tenant}] += double(l.placement.size());
  }
  for (const ServerView& s : servers) {
    for (const Device& d : s.info.devices) {
      memory[{s.info.id, std::to_string(d.index), d.kind}] = double(d.memory_bytes);
    }
    for (const DeviceUse& u : s.use) {
      used[{s.info.id, std::to_string(u.index)}] = double(u.memory_used_bytes);
      utilization[{s.info.id, std::to_string(u.index)}] = u.utilization;
    }
  }
  set_all(queue_, queued, &queue_shown_);
  set_all(leases_, held, &leases_shown_);
  set_all(leased_devices_, devices, &leased_shown_);
  set_all(device_memory_, memory, &memory_shown_);
  set_all(device_used_, used, &used_shown_);
  set_all(device_utilization_, utilization, &utilization_shown_);
  servers_.set(double(servers.size()));
}

}  // namespace rgpu::pool::service
