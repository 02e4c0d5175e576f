// A day of a small pool driven through the real scheduler (see
// history_trace.h).
#include "history_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::testing {
namespace {

constexpr Millis kMinute = 60'000;
constexpr Millis kHour = 60 * kMinute;
constexpr uint64_t kG = 1ull << 30;

ServerInfo make_server(const std::string& id, uint32_t n, const std::string& kind, uint32_t cc, uint64_t memory) {
  ServerInfo s{id, id + ":7000", {}};
  for (uint32_t i = 0; i < n; ++i) s.devices.push_back(Device{i, kind, cc, memory, {}});
  return s;
}

struct Job {
  size_t tenant = 0;
  Millis duration = 0;
  Millis submitted = 0;
};

struct Active {
  Lease lease;
  size_t tenant = 0;
  Millis end = 0;
};

}  // namespace

const std::vector<TraceTenant>& trace_tenants() {
  static const std::vector<TraceTenant> t = {{"inference", 0.3}, {"training", 0.9}, {"research", 0.6}};
  return t;
}

void run_day_trace(History& h, const TraceOptions& opt) {
  ManualClock clock(opt.start);
  PoolConfig config;
  config.heartbeat_interval_ms = kMinute;
  config.heartbeat_timeout_ms = 3 * kMinute;
  config.lease_ttl_ms = 48 * kHour;
  Scheduler sched(config, clock);
  const std::vector<ServerInfo> servers = {make_server("srv-a", 4, "NVIDIA H100 80GB HBM3", 90, 80 * kG),
                                           make_server("srv-b", 4, "NVIDIA A100-SXM4-40GB", 80, 40 * kG),
                                           make_server("srv-c", 2, "cpu", 80, 32 * kG)};
  std::map<std::string, const ServerInfo*> by_id;
  for (const ServerInfo& s : servers) {
    by_id[s.id] = &s;
    (void)sched.register_server(s);
    h.server_registered(s, opt.start);
  }
  std::mt19937_64 rng(opt.seed);
  std::map<TicketId, Job> jobs;
  std::map<LeaseId, Active> active;
  auto note = [&](const Changes& c, Millis now) {
    h.changes(c, now);
    for (const Grant& g : c.granted) {
      auto it = jobs.find(g.ticket);
      if (it == jobs.end()) continue;
      active[g.lease.id] = {g.lease, it->second.tenant, now + it->second.duration};
      jobs.erase(it);
    }
    for (const EndedLease& e : c.ended) active.erase(e.lease.id);
    for (TicketId t : c.timed_out) {
      auto it = jobs.find(t);
      if (it == jobs.end()) continue;
      h.gave_up(trace_tenants()[it->second.tenant].name, now - it->second.submitted, now);
      jobs.erase(it);
    }
  };
  // Part of a device a lease holds, as the report counts it.
  auto part = [&](const PlacedDevice& d) {
    const uint64_t memory = by_id[d.server_id]->devices[d.device].memory_bytes;
    return std::max(d.share, static_cast<double>(d.memory_bytes) / static_cast<double>(memory));
  };

  for (Millis now = opt.start + kMinute; now <= opt.start + opt.hours * kHour; now += kMinute) {
    clock.set(now);
    const double hour = std::fmod(static_cast<double>(now - opt.start) / kHour, 24.0);
    // 1. Heartbeats: what each device did over the last minute.
    for (const ServerInfo& s : servers) {
      std::vector<DeviceUse> use;
      for (const Device& d : s.devices) use.push_back({d.index, 0, 0.0});
      for (const auto& [id, a] : active) {
        for (const PlacedDevice& p : a.lease.placement) {
          if (p.server_id != s.id) continue;
          use[p.device].utilization += part(p) * trace_tenants()[a.tenant].busy_ratio;
          use[p.device].memory_used_bytes += p.memory_bytes;
        }
      }
      for (DeviceUse& u : use) u.utilization = std::min(1.0, u.utilization);
      (void)sched.heartbeat(s.id, use);
      h.heartbeat(s.id, use, now);
    }
    // 2. Work that is done.
    std::vector<LeaseId> done;
    for (const auto& [id, a] : active) {
      if (a.end <= now) done.push_back(id);
    }
    for (LeaseId id : done) {
      active.erase(id);
      auto c = sched.release(id);
      h.released(id, now);
      if (c.is_ok()) note(c.value(), now);
    }
    // 3. New work, by the hour of the day.
    const bool day = hour >= 8 && hour < 20, night = hour >= 19 || hour < 7;
    const double rates[] = {day ? 0.3 : 0.05, night ? 0.03 : 0.005, 0.02};
    for (size_t t = 0; t < 3; ++t) {
      const int n = std::poisson_distribution<int>(rates[t])(rng);
      for (int k = 0; k < n; ++k) {
        Request r;
        r.tenant = trace_tenants()[t].name;
        Job job{t, 0, now};
        if (t == 0) {
          r.devices = 1, r.memory_bytes = 20 * kG, r.share = 0.25, r.priority = kPriorityHigh;
          r.timeout_ms = 15 * kMinute;
          job.duration = static_cast<Millis>(std::exponential_distribution<double>(1.0 / (30.0 * kMinute))(rng));
        } else if (t == 1) {
          r.devices = std::uniform_int_distribution<int>(0, 1)(rng) ? 2 : 1;
          r.timeout_ms = 4 * kHour;
          job.duration = static_cast<Millis>(std::lognormal_distribution<double>(std::log(2.0 * kHour), 0.7)(rng));
        } else {
          r.kind = KindWanted::kAny, r.priority = kPriorityLow;
          r.timeout_ms = kHour;
          job.duration = static_cast<Millis>(std::exponential_distribution<double>(1.0 / kHour)(rng));
        }
        // Whole minutes, so leases start and end where heartbeats fall.
        job.duration = std::max<Millis>(kMinute, job.duration / kMinute * kMinute);
        auto sub = sched.submit(r);
        if (!sub.is_ok()) continue;
        jobs[sub.value().ticket] = job;
        note(sub.value().changes, now);
      }
    }
    // 4. What time ended, and the queue.
    note(sched.tick(), now);
    h.queue(sched.queue(), now);
  }
}

}  // namespace rgpu::pool::testing
