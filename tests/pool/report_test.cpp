// The usage report's numbers, on histories small enough to check by hand,
// and on a day of the real scheduler whose answer is known.
#include "rgpu/pool/report.h"

#include <gtest/gtest.h>

#include "history_trace.h"

namespace rgpu::pool {
namespace {

constexpr Millis kH = 3'600'000;
constexpr uint64_t kG = 1ull << 30;

HistoryEvent server(Millis t, const std::string& id, uint32_t devices, uint64_t memory = 80 * kG) {
  ServerSeen s{id, {}};
  for (uint32_t i = 0; i < devices; ++i) s.devices.push_back({i, "NVIDIA H100", memory});
  return {t, s};
}
HistoryEvent grant(Millis t, LeaseId id, const std::string& tenant, uint64_t memory, double share,
                   Millis waited = 0, uint32_t device = 0) {
  return {t, LeaseGranted{id, tenant, kPriorityNormal, waited, {{"s", device, 0, memory, share}}}};
}
HistoryEvent end(Millis t, LeaseId id, const std::string& reason = "released") { return {t, LeaseEnded{id, reason}}; }
// Utilization `u` of device 0 of "s" over the hour before t.
HistoryEvent util(Millis t, double u, uint32_t device = 0) {
  return {t, UtilizationSample{"s", kH, {{device, u, 0}}}};
}

const TenantReport* tenant(const Report& r, const std::string& name) {
  for (const TenantReport& t : r.tenants) {
    if (t.tenant == name) return &t;
  }
  return nullptr;
}

Report report(const std::vector<HistoryEvent>& ev, Millis since, Millis end_at, Millis bucket = 0) {
  ReportOptions o;
  o.since_ms = since;
  o.end = end_at;
  o.bucket_ms = bucket;
  o.max_sample_span_ms = 2 * kH;
  auto r = make_report(ev, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : Report{};
}

TEST(Report, ParsesDurations) {
  EXPECT_EQ(parse_duration("90m").value(), 90 * 60'000);
  EXPECT_EQ(parse_duration("24h").value(), 24 * kH);
  EXPECT_EQ(parse_duration("7d").value(), 7 * 24 * kH);
  EXPECT_EQ(parse_duration("1d12h").value(), 36 * kH);
  EXPECT_EQ(parse_duration("30s").value(), 30'000);
  for (const char* bad : {"", "h", "24", "24x", "-1h", "0h", "400d", "99999999999h", "1h "}) {
    EXPECT_FALSE(parse_duration(bad).is_ok()) << bad;
  }
}

// One whole device leased for two hours at 50% utilization: 2 GPU-hours
// leased, 1 busy; the device reports for all four hours of the window.
TEST(Report, WholeDeviceLeasedAndBusy) {
  std::vector<HistoryEvent> ev = {server(0, "s", 1), grant(0, 1, "a", 80 * kG, 1.0), util(kH, 0.5), util(2 * kH, 0.5),
                                  end(2 * kH, 1),    util(3 * kH, 0.0),                util(4 * kH, 0.0)};
  Report r = report(ev, 4 * kH, 4 * kH, kH);
  const TenantReport* a = tenant(r, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->leases, 1u);
  EXPECT_DOUBLE_EQ(a->gpu_hours_leased, 2.0);
  EXPECT_DOUBLE_EQ(a->gpu_hours_busy, 1.0);
  EXPECT_DOUBLE_EQ(a->gpu_hours_unmeasured, 0.0);
  EXPECT_EQ(a->ended.at("released"), 1u);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].kind, "NVIDIA H100");
  EXPECT_DOUBLE_EQ(r.devices[0].hours_measured, 4.0);
  EXPECT_DOUBLE_EQ(r.devices[0].gpu_hours_leased, 2.0);
  EXPECT_DOUBLE_EQ(r.devices[0].gpu_hours_busy, 1.0);
  ASSERT_EQ(r.buckets.size(), 4u);
  EXPECT_DOUBLE_EQ(r.buckets[0].leased_gpus, 1.0);
  EXPECT_DOUBLE_EQ(r.buckets[1].busy_gpus, 0.5);
  EXPECT_DOUBLE_EQ(r.buckets[2].leased_gpus, 0.0);
  EXPECT_DOUBLE_EQ(r.buckets[3].measured_gpus, 1.0);
  EXPECT_DOUBLE_EQ(r.total.gpu_hours_leased, 2.0);
}

// Two tenants on one device, a quarter and three quarters of it (by
// memory; the share is smaller): 80% busy splits 0.2 and 0.6.
TEST(Report, SharedDeviceSplitsBusyByPart) {
  std::vector<HistoryEvent> ev = {server(0, "s", 1), grant(0, 1, "a", 20 * kG, 0.1), grant(0, 2, "b", 60 * kG, 0.5),
                                  util(kH, 0.8)};
  Report r = report(ev, kH, kH);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_leased, 0.25);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_busy, 0.2);
  EXPECT_DOUBLE_EQ(tenant(r, "b")->gpu_hours_leased, 0.75);
  EXPECT_NEAR(tenant(r, "b")->gpu_hours_busy, 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(r.devices[0].gpu_hours_busy_leased, 0.8);
}

// A lease is never busier than what it holds: half a device, 90% busy.
TEST(Report, BusyIsCappedByWhatIsHeld) {
  std::vector<HistoryEvent> ev = {server(0, "s", 1), grant(0, 1, "a", 40 * kG, 0.5), util(kH, 0.9)};
  Report r = report(ev, kH, kH);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_leased, 0.5);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_busy, 0.5);
  EXPECT_DOUBLE_EQ(r.devices[0].gpu_hours_busy, 0.9);
}

// Only the window counts: a lease from 1h before it to 1h into it gives 1
// GPU-hour; a grant before the window is not among its waits.
TEST(Report, WindowClipsLeasesAndWaits) {
  std::vector<HistoryEvent> ev = {server(0, "s", 1), grant(kH, 1, "a", 0, 1.0, 5'000), grant(3 * kH, 2, "a", 0, 1.0, 7'000, 0),
                                  end(3 * kH, 1), end(4 * kH, 2), util(6 * kH, 0.0),
                                  // Before the window, on a device silent since: in neither table.
                                  grant(0, 3, "old", 0, 1.0, 0, 1), end(kH, 3)};
  Report r = report(ev, 4 * kH, 6 * kH);  // window [2h, 6h)
  EXPECT_EQ(tenant(r, "old"), nullptr);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].device, 0u);
  const TenantReport* a = tenant(r, "a");
  EXPECT_EQ(a->leases, 2u);
  EXPECT_DOUBLE_EQ(a->gpu_hours_leased, 2.0);
  EXPECT_EQ(a->wait.count, 1u);
  EXPECT_DOUBLE_EQ(a->wait.max_s, 7.0);
  // The one sample covers [5h, 6h), after both leases: none of it measured.
  EXPECT_DOUBLE_EQ(a->gpu_hours_unmeasured, 2.0);
}

// Nearest-rank percentiles of the waits 1 s .. 20 s: p50 10 s, p95 19 s.
TEST(Report, QueueWaitPercentiles) {
  std::vector<HistoryEvent> ev = {server(0, "s", 20)};
  for (uint32_t i = 0; i < 20; ++i) ev.push_back(grant(kH, i + 1, "a", 0, 1.0, (i + 1) * 1000, i));
  ev.push_back({kH, RequestGaveUp{"a", 60'000}});
  Report r = report(ev, kH, 2 * kH);
  const TenantReport* a = tenant(r, "a");
  EXPECT_EQ(a->wait.count, 20u);
  EXPECT_DOUBLE_EQ(a->wait.p50_s, 10.0);
  EXPECT_DOUBLE_EQ(a->wait.p95_s, 19.0);
  EXPECT_DOUBLE_EQ(a->wait.max_s, 20.0);
  EXPECT_EQ(a->gave_up, 1u);
  EXPECT_DOUBLE_EQ(r.total.wait.p50_s, 10.0);
}

// The queue's length is a step function: 4 waiting for the first half of
// a bucket, none after, is a mean of 2.
TEST(Report, QueueLengthOverTime) {
  std::vector<HistoryEvent> ev = {{0, QueueSample{4, {{"a", 4}}}}, {kH / 2, QueueSample{0, {}}}, util(2 * kH, 0.0)};
  Report r = report(ev, 2 * kH, 2 * kH, kH);
  ASSERT_EQ(r.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(r.buckets[0].queued, 2.0);
  EXPECT_DOUBLE_EQ(r.buckets[1].queued, 0.0);
}

// A pool that restarts lost its leases: they end at the last event before
// the restart, and lease ids restart with the new process.
TEST(Report, PoolRestartEndsOpenLeases) {
  std::vector<HistoryEvent> ev = {{0, PoolStarted{}}, server(0, "s", 2), grant(0, 1, "a", 0, 1.0),
                                  util(kH, 1.0),      {3 * kH, PoolStarted{}}, grant(3 * kH, 1, "b", 0, 1.0, 0, 1),
                                  end(4 * kH, 1)};
  Report r = report(ev, 4 * kH, 4 * kH);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_leased, 1.0);
  EXPECT_EQ(tenant(r, "a")->ended.at("pool_restarted"), 1u);
  EXPECT_DOUBLE_EQ(tenant(r, "b")->gpu_hours_leased, 1.0);
  EXPECT_EQ(r.unmatched_ends, 0u);
}

// A lease seen twice (re-written at a rotation) counts once; an end with
// no grant is counted, not guessed at.
TEST(Report, DuplicateGrantsAndUnmatchedEnds) {
  std::vector<HistoryEvent> ev = {server(0, "s", 1), grant(0, 1, "a", 0, 1.0), grant(0, 1, "a", 0, 1.0),
                                  end(kH, 1), end(kH, 99)};
  Report r = report(ev, kH, kH);
  EXPECT_DOUBLE_EQ(tenant(r, "a")->gpu_hours_leased, 1.0);
  EXPECT_EQ(tenant(r, "a")->leases, 1u);
  EXPECT_EQ(r.unmatched_ends, 1u);
}

TEST(Report, RefusesAnEmptyWindow) {
  ReportOptions o;
  o.since_ms = 0;
  EXPECT_FALSE(make_report({}, o).is_ok());
}

// A day of the real scheduler: each tenant's work keeps busy its known
// part of what it leases, and no device is ever shared between tenants
// at once, so the report must find those ratios.
TEST(Report, DayTraceFindsEachTenantsBusyRatio) {
  auto h = History::open({.path = "", .sample_interval_ms = 60'000, .heartbeat_interval_ms = 60'000}, testing::TraceOptions{}.start);
  ASSERT_TRUE(h.is_ok());
  testing::run_day_trace(*h.value());
  ReportOptions o;
  o.since_ms = 24 * kH;
  auto r = make_report(h.value()->snapshot(), o);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r.value().tenants.size(), 3u);
  for (const testing::TraceTenant& t : testing::trace_tenants()) {
    const TenantReport* tr = tenant(r.value(), t.name);
    ASSERT_NE(tr, nullptr) << t.name;
    EXPECT_GT(tr->gpu_hours_leased, 1.0) << t.name;
    EXPECT_NEAR(tr->gpu_hours_busy / tr->gpu_hours_leased, t.busy_ratio, 1e-6) << t.name;
    EXPECT_NEAR(tr->gpu_hours_unmeasured, 0.0, 1e-9) << t.name;
    EXPECT_GT(tr->wait.count, 0u);
  }
  // Never more leased than the pool has (10 devices), and the day shows:
  // inference leases more by day than by night.
  double day = 0, night = 0;
  for (const Bucket& b : r.value().buckets) {
    EXPECT_LE(b.leased_gpus, 10.0 + 1e-9);
    const double hour = static_cast<double>((b.start - r.value().from) % (24 * kH)) / kH;
    auto it = b.leased_by_tenant.find("inference");
    const double v = it == b.leased_by_tenant.end() ? 0 : it->second;
    (hour >= 9 && hour < 19 ? day : night) += v;
  }
  EXPECT_GT(day, night);
}

}  // namespace
}  // namespace rgpu::pool
