// The usage report's numbers (see report.h; definitions in docs/pool.md,
// "Usage report"). One pass over the events collects leases, samples and
// queue lengths; then each device's time is cut at every point where its
// utilization or its set of leases changes, and each piece is attributed.
#include "rgpu/pool/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

namespace rgpu::pool {
namespace {

constexpr double kMsPerHour = 3'600'000.0;

struct LeaseRec {
  std::string tenant;
  Millis start = 0, end = -1;  // end -1: still open
  std::string reason;
  std::vector<LeaseGranted::Dev> devices;
  Millis waited_ms = 0;
};

struct Segment {
  Millis a = 0, b = 0;
  double u = 0;
};

using DevKey = std::pair<std::string, uint32_t>;

struct DevInfo {
  std::string kind;
  uint64_t memory = 0;
};

// Part of a device one lease holds: the larger of its compute share and its
// part of the device's memory, as the scheduler counts device-equivalents.
double fraction(const LeaseGranted::Dev& d, const DevInfo* info) {
  double f = d.share;
  if (info && info->memory > 0) {
    f = std::max(f, static_cast<double>(d.memory_bytes) / static_cast<double>(info->memory));
  } else if (f <= 0) {
    f = 1.0;  // a whole slice of a device the history never described
  }
  return std::clamp(f, 0.0, 1.0);
}

WaitStats wait_stats(std::vector<Millis> waits) {
  WaitStats w;
  w.count = waits.size();
  if (waits.empty()) return w;
  std::sort(waits.begin(), waits.end());
  // Nearest rank: the smallest wait that at least p of the waits do not
  // exceed.
  auto rank = [&](double p) {
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(waits.size())));
    i = std::clamp<size_t>(i, 1, waits.size()) - 1;
    return static_cast<double>(waits[i]) / 1000.0;
  };
  w.p50_s = rank(0.50);
  w.p95_s = rank(0.95);
  w.max_s = static_cast<double>(waits.back()) / 1000.0;
  return w;
}

}  // namespace

Result<Millis> parse_duration(std::string_view text) {
  if (text.empty()) return invalid_argument("empty duration: expected e.g. 90m, 24h or 7d");
  constexpr Millis kMax = 366LL * 86'400'000;
  Millis total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j == text.size() || j - i > 9) {
      return invalid_argument("duration '" + std::string(text) + "': expected numbers with units s, m, h or d");
    }
    const Millis n = std::stoll(std::string(text.substr(i, j - i)));
    Millis unit = 0;
    switch (text[j]) {
      case 's': unit = 1'000; break;
      case 'm': unit = 60'000; break;
      case 'h': unit = 3'600'000; break;
      case 'd': unit = 86'400'000; break;
      default: return invalid_argument("duration '" + std::string(text) + "': unknown unit '" + text[j] + "'");
    }
    total += n * unit;
    if (total > kMax) return invalid_argument("duration '" + std::string(text) + "' is longer than 366 days");
    i = j + 1;
  }
  if (total <= 0) return invalid_argument("duration '" + std::string(text) + "' is not positive");
  return total;
}

Result<Report> make_report(const std::vector<HistoryEvent>& input, const ReportOptions& opt) {
  if (opt.since_ms <= 0) return invalid_argument("the report's window must be positive");
  if (opt.bucket_ms < 0 || opt.max_sample_span_ms < 0) return invalid_argument("negative report option");
  // Rotation re-writes open leases with their first times, so order by time
  // (stably: same-time events keep the order they happened in).
  std::vector<const HistoryEvent*> events;
  events.reserve(input.size());
  for (const HistoryEvent& e : input) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) { return a->t < b->t; });

  Report r;
  r.events = input.size();
  r.to = opt.end > 0 ? opt.end : (events.empty() ? opt.since_ms : events.back()->t);
  r.from = r.to - opt.since_ms;
  const Millis bucket = opt.bucket_ms > 0 ? opt.bucket_ms : std::max<Millis>(60'000, (opt.since_ms / 48 + 59'999) / 60'000 * 60'000);
  r.bucket_ms = bucket;
  const size_t nbuckets = static_cast<size_t>((opt.since_ms + bucket - 1) / bucket);
  r.buckets.resize(nbuckets);
  for (size_t i = 0; i < nbuckets; ++i) r.buckets[i].start = r.from + static_cast<Millis>(i) * bucket;

  // One pass: leases (keyed by process epoch, since ids restart with the
  // pool), device descriptions, utilization segments, queue steps.
  std::map<DevKey, DevInfo> devinfo;
  std::map<std::pair<int, LeaseId>, size_t> open;
  std::vector<LeaseRec> leases;
  std::map<DevKey, std::vector<Segment>> samples;
  std::vector<std::pair<Millis, uint64_t>> queue_steps;
  std::map<std::string, TenantReport> tenants;
  int epoch = 0;
  Millis last_t = 0;
  auto tenant = [&](const std::string& name) -> TenantReport& {
    TenantReport& t = tenants[name];
    t.tenant = name;
    return t;
  };
  auto in_window = [&](Millis t) { return t >= r.from && t < r.to; };
  auto end_lease = [&](size_t i, Millis t, const std::string& reason) {
    leases[i].end = t;
    leases[i].reason = reason;
  };
  for (const HistoryEvent* ev : events) {
    const Millis t = ev->t;
    if (std::holds_alternative<PoolStarted>(ev->body)) {
      for (auto& [key, i] : open) end_lease(i, std::max(leases[i].start, last_t), "pool_restarted");
      open.clear();
      ++epoch;
      queue_steps.emplace_back(t, 0);
    } else if (const auto* s = std::get_if<ServerSeen>(&ev->body)) {
      for (const auto& d : s->devices) devinfo[{s->server, d.index}] = {d.kind, d.memory_bytes};
    } else if (const auto* g = std::get_if<LeaseGranted>(&ev->body)) {
      if (open.count({epoch, g->lease})) continue;  // re-written at a rotation
      open[{epoch, g->lease}] = leases.size();
      leases.push_back({g->tenant, t, -1, "", g->devices, g->waited_ms});
    } else if (const auto* e = std::get_if<LeaseEnded>(&ev->body)) {
      auto it = open.find({epoch, e->lease});
      if (it == open.end()) {
        ++r.unmatched_ends;
      } else {
        end_lease(it->second, t, e->reason);
        open.erase(it);
      }
    } else if (const auto* q = std::get_if<RequestGaveUp>(&ev->body)) {
      if (in_window(t)) ++tenant(q->tenant).gave_up;
    } else if (const auto* u = std::get_if<UtilizationSample>(&ev->body)) {
      const Millis span = std::min(u->span_ms, opt.max_sample_span_ms);
      for (const auto& d : u->devices) samples[{u->server, d.device}].push_back({t - span, t, d.utilization});
    } else if (const auto* q = std::get_if<QueueSample>(&ev->body)) {
      queue_steps.emplace_back(t, q->queued);
    }
    last_t = t;
  }

  // Per tenant: leases, waits, ends. Open leases run to the window's end.
  std::map<std::string, std::vector<Millis>> waits;
  std::vector<Millis> all_waits;
  std::map<DevKey, std::vector<std::pair<size_t, double>>> on_device;  // lease index, fraction
  for (size_t i = 0; i < leases.size(); ++i) {
    LeaseRec& l = leases[i];
    const Millis end = l.end < 0 ? r.to : l.end;
    TenantReport& tr = tenant(l.tenant);
    if (l.start < r.to && end > r.from) ++tr.leases;
    if (in_window(l.start)) {
      waits[l.tenant].push_back(l.waited_ms);
      all_waits.push_back(l.waited_ms);
    }
    if (l.end >= 0 && in_window(l.end)) ++tr.ended[l.reason];
    l.end = end;
    for (const auto& d : l.devices) {
      const DevKey key{d.server, d.device};
      auto info = devinfo.find(key);
      on_device[key].emplace_back(i, fraction(d, info == devinfo.end() ? nullptr : &info->second));
    }
  }

  // Per device: cut its time where anything changes, attribute each piece.
  std::map<DevKey, DeviceReport> devices;
  for (const auto& [key, segs] : samples) devices[key];
  for (const auto& [key, ls] : on_device) devices[key];
  for (auto& [key, dr] : devices) {
    dr.server = key.first;
    dr.device = key.second;
    if (auto it = devinfo.find(key); it != devinfo.end()) dr.kind = it->second.kind;
    std::vector<Segment> segs = samples.count(key) ? samples[key] : std::vector<Segment>{};
    std::sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) { return a.b < b.b; });
    for (size_t i = 1; i < segs.size(); ++i) segs[i].a = std::max(segs[i].a, segs[i - 1].b);  // no overlaps
    const auto& ls = on_device.count(key) ? on_device[key] : std::vector<std::pair<size_t, double>>{};

    std::vector<Millis> cuts = {r.from, r.to};
    for (size_t i = 1; i < nbuckets; ++i) cuts.push_back(r.buckets[i].start);
    for (const Segment& s : segs) cuts.insert(cuts.end(), {s.a, s.b});
    for (const auto& [li, f] : ls) cuts.insert(cuts.end(), {leases[li].start, leases[li].end});
    for (Millis& c : cuts) c = std::clamp(c, r.from, r.to);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

    size_t si = 0;
    std::vector<std::pair<size_t, double>> active;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      const Millis a = cuts[c], b = cuts[c + 1];
      const double dt = static_cast<double>(b - a);
      while (si < segs.size() && segs[si].b <= a) ++si;
      const bool measured = si < segs.size() && segs[si].a <= a && segs[si].a < segs[si].b;
      const double u = measured ? segs[si].u : 0.0;
      active.clear();
      double held = 0;
      for (const auto& [li, f] : ls) {
        if (leases[li].start <= a && a < leases[li].end) {
          active.emplace_back(li, f);
          held += f;
        }
      }
      Bucket& bk = r.buckets[static_cast<size_t>((a - r.from) / bucket)];
      if (measured) {
        dr.hours_measured += dt;
        dr.gpu_hours_busy += u * dt;
        bk.measured_gpus += dt;
        bk.busy_gpus += u * dt;
      }
      dr.gpu_hours_leased += std::min(1.0, held) * dt;
      bk.leased_gpus += std::min(1.0, held) * dt;
      for (const auto& [li, f] : active) {
        TenantReport& tr = tenant(leases[li].tenant);
        // A device's busy time goes to its leases in proportion to what
        // each holds, and no lease is busier than what it holds.
        const double leased = f * dt / std::max(1.0, held);
        tr.gpu_hours_leased += leased;
        bk.leased_by_tenant[leases[li].tenant] += leased;
        if (measured) {
          const double busy = std::min(f, held > 0 ? u * f / held : 0.0) * dt;
          tr.gpu_hours_busy += busy;
          dr.gpu_hours_busy_leased += busy;
        } else {
          tr.gpu_hours_unmeasured += leased;
        }
      }
    }
    for (double* h : {&dr.hours_measured, &dr.gpu_hours_busy, &dr.gpu_hours_leased, &dr.gpu_hours_busy_leased}) {
      *h /= kMsPerHour;
    }
    // A device neither reporting nor leased in the window was not in the
    // pool then.
    if (dr.hours_measured > 0 || dr.gpu_hours_leased > 0) r.devices.push_back(dr);
  }

  // The queue's length is a step function from one sample to the next.
  for (size_t i = 0; i < queue_steps.size(); ++i) {
    Millis a = std::max(queue_steps[i].first, r.from);
    const Millis b = std::min(i + 1 < queue_steps.size() ? queue_steps[i + 1].first : r.to, r.to);
    while (a < b) {
      const size_t k = static_cast<size_t>((a - r.from) / bucket);
      const Millis edge = std::min(b, r.from + static_cast<Millis>(k + 1) * bucket);
      r.buckets[k].queued += static_cast<double>(queue_steps[i].second) * static_cast<double>(edge - a);
      a = edge;
    }
  }
  // Bucket sums (device-ms) to means (devices).
  for (size_t k = 0; k < nbuckets; ++k) {
    Bucket& bk = r.buckets[k];
    const double len = static_cast<double>(std::min(r.to, bk.start + bucket) - bk.start);
    for (double* v : {&bk.measured_gpus, &bk.leased_gpus, &bk.busy_gpus, &bk.queued}) *v /= len;
    for (auto& [name, v] : bk.leased_by_tenant) v /= len;
  }

  r.total.tenant = "*";
  for (auto& [name, tr] : tenants) {
    // Tenants seen only outside the window are not listed.
    if (tr.leases == 0 && tr.gave_up == 0 && tr.ended.empty() && waits[name].empty()) continue;
    tr.gpu_hours_leased /= kMsPerHour;
    tr.gpu_hours_busy /= kMsPerHour;
    tr.gpu_hours_unmeasured /= kMsPerHour;
    tr.wait = wait_stats(waits[name]);
    r.total.leases += tr.leases;
    r.total.gpu_hours_leased += tr.gpu_hours_leased;
    r.total.gpu_hours_busy += tr.gpu_hours_busy;
    r.total.gpu_hours_unmeasured += tr.gpu_hours_unmeasured;
    r.total.gave_up += tr.gave_up;
    for (const auto& [reason, n] : tr.ended) r.total.ended[reason] += n;
    r.tenants.push_back(tr);
  }
  r.total.wait = wait_stats(all_waits);
  return r;
}

}  // namespace rgpu::pool
