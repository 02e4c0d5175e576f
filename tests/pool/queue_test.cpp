// The queue and what time does: waiting, priority, timeouts, placement the
// moment capacity frees, server loss, fair share by weight, preemption,
// lease expiry.
#include <gtest/gtest.h>

#include <map>
#include <queue>

#include "pool_test_util.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool {
namespace {

using testing::kGiB;
using testing::placed;
using testing::req;
using testing::server;

TEST(PoolQueue, WaitsAndIsPlacedTheMomentCapacityFrees) {
  ManualClock clock(1000);
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease first = placed(s.submit(req(1)));
  auto second = s.submit(req(1, 0, "u"));
  ASSERT_TRUE(second.is_ok());
  ASSERT_TRUE(second.value().changes.granted.empty());
  const TicketId ticket = second.value().ticket;
  auto third = s.submit(req(1, 0, "v"));
  ASSERT_EQ(s.position(ticket)->ahead, 0u);
  EXPECT_EQ(s.position(third.value().ticket)->ahead, 1u);
  EXPECT_EQ(s.position(ticket)->since, 1000);

  clock.advance(2500);
  auto freed = s.release(first.id);
  ASSERT_TRUE(freed.is_ok());
  ASSERT_EQ(freed.value().granted.size(), 1u);
  EXPECT_EQ(freed.value().granted[0].ticket, ticket);
  EXPECT_EQ(freed.value().granted[0].waited_ms, 2500);
  EXPECT_EQ(freed.value().granted[0].lease.tenant, "u");
  EXPECT_FALSE(s.position(ticket).has_value());
  EXPECT_EQ(s.position(third.value().ticket)->ahead, 0u);
  EXPECT_FALSE(s.release(first.id).is_ok()) << "released twice";
}

TEST(PoolQueue, AWaitingRequestSaysWhy) {
  ManualClock clock(1000);
  Scheduler s(PoolConfig{}, clock);
  // With no server yet, a request waits for one (it may register any moment).
  const TicketId early = s.submit(req(1)).value().ticket;
  EXPECT_EQ(s.position(early)->why,
            "1 device of kind nvidia, a whole slice asked; no server has registered with the pool yet; position 1");
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());  // places it
  ASSERT_FALSE(s.position(early).has_value());
  Lease second = placed(s.submit(req(1)));
  Request half = req(1, 8 * kGiB);
  const TicketId waiting = s.submit(half).value().ticket;
  EXPECT_EQ(s.position(waiting)->why, "1 device of kind nvidia, 8.0 GiB asked, 0 free of 2; position 1");
  // Once leases have ended, how long they lasted: the median of the recent ones.
  clock.advance(40'000);
  auto freed = s.release(second.id);
  ASSERT_TRUE(freed.is_ok());
  ASSERT_EQ(freed.value().granted.size(), 1u);
  const TicketId next = s.submit(req(2)).value().ticket;
  EXPECT_EQ(s.position(next)->why,
            "2 devices of kind nvidia, whole slices asked, 0 free of 2; position 1; recent leases lasted ~40 s");
}

TEST(PoolQueue, HigherPriorityGoesFirst) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease held = placed(s.submit(req(1)));
  Request low = req(1);
  low.priority = kPriorityLow;
  Request high = req(1);
  high.priority = kPriorityHigh;
  const TicketId low_ticket = s.submit(low).value().ticket;
  const TicketId high_ticket = s.submit(high).value().ticket;
  EXPECT_EQ(s.position(low_ticket)->ahead, 1u);
  const std::vector<QueuedView> q = s.queue();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].ticket, high_ticket);
  EXPECT_EQ(q[1].ticket, low_ticket);
  EXPECT_EQ(q[1].request.priority, kPriorityLow);
  auto freed = s.release(held.id);
  ASSERT_EQ(freed.value().granted.size(), 1u);
  EXPECT_EQ(freed.value().granted[0].ticket, high_ticket);
}

TEST(PoolQueue, SmallerRequestsFillCapacityABiggerOneCannotUse) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());
  Lease one = placed(s.submit(req(1)));
  Lease two = placed(s.submit(req(1)));
  const TicketId big = s.submit(req(2)).value().ticket;
  const TicketId small = s.submit(req(1)).value().ticket;
  auto freed = s.release(one.id);
  ASSERT_EQ(freed.value().granted.size(), 1u);
  EXPECT_EQ(freed.value().granted[0].ticket, small);
  EXPECT_TRUE(s.position(big).has_value());
}

TEST(PoolQueue, TimesOutAndIsNotPlacedAfterwards) {
  ManualClock clock;
  PoolConfig c;
  c.queue_timeout_ms = 60'000;
  c.heartbeat_timeout_ms = 10'000'000;  // the server outlives the test
  Scheduler s(c, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease held = placed(s.submit(req(1)));
  Request quick = req(1);
  quick.timeout_ms = 5'000;
  const TicketId q = s.submit(quick).value().ticket;
  const TicketId d = s.submit(req(1)).value().ticket;  // the default, 60 s
  clock.advance(4'999);
  EXPECT_TRUE(s.tick().timed_out.empty());
  clock.advance(1);
  EXPECT_EQ(s.tick().timed_out, std::vector<TicketId>{q});
  EXPECT_FALSE(s.position(q).has_value());
  EXPECT_FALSE(s.cancel(q).is_ok());
  clock.advance(55'000);
  EXPECT_EQ(s.tick().timed_out, std::vector<TicketId>{d});
  EXPECT_TRUE(s.release(held.id).value().granted.empty()) << "nobody is waiting any more";
}

TEST(PoolQueue, ARequestPastItsTimeoutIsNotPlacedBeforeTheNextTick) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease held = placed(s.submit(req(1)));
  Request r = req(1);
  r.timeout_ms = 1'000;
  const TicketId t = s.submit(r).value().ticket;
  clock.advance(1'000);
  auto freed = s.release(held.id);
  EXPECT_TRUE(freed.value().granted.empty());
  EXPECT_EQ(freed.value().timed_out, std::vector<TicketId>{t});
  EXPECT_TRUE(s.tick().timed_out.empty()) << "reported once";
}

TEST(PoolQueue, CancelledRequestIsNeverPlaced) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease held = placed(s.submit(req(1)));
  const TicketId t = s.submit(req(1)).value().ticket;
  EXPECT_TRUE(s.cancel(t).is_ok());
  EXPECT_TRUE(s.release(held.id).value().granted.empty());
  EXPECT_EQ(s.stats().queued, 0u);
}

TEST(PoolQueue, ANewServerTakesWaitingRequests) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  const TicketId t = s.submit(req(2)).value().ticket;
  auto joined = s.register_server(server("a", 2));
  ASSERT_EQ(joined.value().granted.size(), 1u);
  EXPECT_EQ(joined.value().granted[0].ticket, t);
}

TEST(PoolQueue, AServerThatMissesHeartbeatsLeavesAndItsLeasesFail) {
  ManualClock clock;
  PoolConfig c;
  c.heartbeat_interval_ms = 1'000;
  c.heartbeat_timeout_ms = 3'000;
  c.queue_timeout_ms = 0;
  Scheduler s(c, clock);
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 1)).is_ok());
  Lease on_a = placed(s.submit(req(2)));
  Lease on_b = placed(s.submit(req(1)));
  ASSERT_EQ(on_a.placement[0].server_id, "a");
  const TicketId waiting = s.submit(req(1)).value().ticket;
  for (int i = 0; i < 3; ++i) {
    clock.advance(1'000);
    ASSERT_TRUE(s.heartbeat("b", {}).is_ok());
    if (i < 2) {
      EXPECT_TRUE(s.tick().ended.empty());
    }
  }
  Changes lost = s.tick();
  ASSERT_EQ(lost.ended.size(), 1u);
  EXPECT_EQ(lost.ended[0].lease.id, on_a.id);
  EXPECT_EQ(lost.ended[0].reason, EndReason::kServerLost);
  EXPECT_FALSE(s.lease(on_a.id).has_value());
  EXPECT_TRUE(s.lease(on_b.id).has_value());
  EXPECT_EQ(s.stats().servers, 1u);
  EXPECT_FALSE(s.heartbeat("a", {}).is_ok()) << "a must register again";
  EXPECT_TRUE(s.position(waiting).has_value());
  // A lease across two servers fails whole when either is lost, and its
  // other device is free again at once.
  ASSERT_TRUE(s.register_server(server("c", 1)).is_ok());  // takes `waiting`
  ASSERT_TRUE(s.release(on_b.id).is_ok());
  ASSERT_TRUE(s.register_server(server("d", 1)).is_ok());
  Lease across = placed(s.submit(req(2)));
  ASSERT_EQ(across.placement.size(), 2u);
  const std::string gone = across.placement[0].server_id;
  const TicketId next = s.submit(req(1)).value().ticket;
  auto removed = s.remove_server(gone);
  ASSERT_EQ(removed.value().ended.size(), 1u);
  EXPECT_EQ(removed.value().ended[0].lease.id, across.id);
  ASSERT_EQ(removed.value().granted.size(), 1u);
  EXPECT_EQ(removed.value().granted[0].ticket, next);
}

TEST(PoolQueue, RegisteringAgainEndsTheOldSessions) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease l = placed(s.submit(req(1)));
  auto again = s.register_server(server("a", 1));
  ASSERT_EQ(again.value().ended.size(), 1u);
  EXPECT_EQ(again.value().ended[0].lease.id, l.id);
  EXPECT_EQ(again.value().ended[0].reason, EndReason::kServerRestarted);
  EXPECT_EQ(placed(s.submit(req(1))).placement[0].server_id, "a");
}

TEST(PoolQueue, LeasesExpireUnlessRenewed) {
  ManualClock clock;
  PoolConfig c;
  c.lease_ttl_ms = 60'000;
  c.heartbeat_timeout_ms = 10'000'000;
  Scheduler s(c, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Lease l = placed(s.submit(req(1)));
  EXPECT_EQ(l.expiry, l.issued + 60'000);
  clock.advance(30'000);
  auto renewed = s.renew(l.id);
  ASSERT_TRUE(renewed.is_ok());
  EXPECT_EQ(renewed.value().expiry, 90'000);
  clock.advance(40'000);
  EXPECT_TRUE(s.tick().ended.empty());
  const TicketId t = s.submit(req(1)).value().ticket;
  clock.advance(20'000);
  Changes ch = s.tick();
  ASSERT_EQ(ch.ended.size(), 1u);
  EXPECT_EQ(ch.ended[0].reason, EndReason::kExpired);
  ASSERT_EQ(ch.granted.size(), 1u);
  EXPECT_EQ(ch.granted[0].ticket, t);
}

// Two tenants, weights 3 and 1, each with more work than the pool holds:
// over simulated hours each gets the pool in proportion to its weight.
TEST(PoolFairShare, SharesFollowWeightsUnderContention) {
  ManualClock clock;
  PoolConfig c;
  c.tenant_weights = {{"big", 3.0}, {"small", 1.0}};
  c.queue_timeout_ms = 0;
  c.lease_ttl_ms = 1'000'000'000;
  c.heartbeat_timeout_ms = 1'000'000'000;
  c.heartbeat_interval_ms = 1'000;
  Scheduler s(c, clock);
  ASSERT_TRUE(s.register_server(server("a", 4)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 4)).is_ok());

  constexpr Millis kMinute = 60'000;
  // Durations vary (5..15 minutes) so releases do not come in lock step.
  auto duration = [](uint64_t n) { return static_cast<Millis>(5 + (n * 7) % 11) * kMinute; };
  using Ending = std::pair<Millis, LeaseId>;
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> endings;
  std::map<LeaseId, Millis> started;
  std::map<std::string, double> busy;  // device-minutes in the window
  const Millis window_start = 60 * kMinute, end = 600 * kMinute;
  uint64_t n = 0;
  auto start = [&](const Grant& g) {
    started[g.lease.id] = clock.now();
    endings.push({clock.now() + duration(++n), g.lease.id});
  };
  // Small submits first, so the pool starts in its favour.
  for (const char* tenant : {"small", "big"}) {
    for (int i = 0; i < 400; ++i) {
      auto sub = s.submit(req(1, 0, tenant));
      ASSERT_TRUE(sub.is_ok());
      for (const Grant& g : sub.value().changes.granted) start(g);
    }
  }
  while (!endings.empty() && endings.top().first <= end) {
    auto [t, id] = endings.top();
    endings.pop();
    clock.set(t);
    const Lease l = *s.lease(id);
    const Millis from = std::max(started[id], window_start);
    if (t > from) busy[l.tenant] += static_cast<double>(t - from) / kMinute;
    auto freed = s.release(id);
    ASSERT_TRUE(freed.is_ok());
    for (const Grant& g : freed.value().granted) start(g);
  }
  const double total = busy["big"] + busy["small"];
  ASSERT_GT(total, 0);
  const double big = busy["big"] / total, small = busy["small"] / total;
  EXPECT_NEAR(big, 0.75, 0.075) << "big " << big << " small " << small;
  EXPECT_NEAR(small, 0.25, 0.025) << "big " << big << " small " << small;
  PoolStats st = s.stats();
  ASSERT_EQ(st.tenants.size(), 2u);
  EXPECT_DOUBLE_EQ(st.held_devices, 8.0) << "the pool stays full";
}

TEST(PoolPreemption, HigherPriorityEndsTheNewestLowerLease) {
  ManualClock clock;
  PoolConfig c;
  c.preemption = true;
  Scheduler s(c, clock);
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());
  Request low = req(1, 0, "batch");
  low.priority = kPriorityLow;
  Lease older = placed(s.submit(low));
  Lease newer = placed(s.submit(low));
  // Equal priority never preempts.
  Request same = req(1, 0, "other");
  same.priority = kPriorityLow;
  auto queued = s.submit(same);
  EXPECT_TRUE(queued.value().changes.ended.empty());
  EXPECT_TRUE(queued.value().changes.granted.empty());
  ASSERT_TRUE(s.cancel(queued.value().ticket).is_ok());

  Request high = req(1, 0, "urgent");
  high.priority = kPriorityHigh;
  auto sub = s.submit(high);
  ASSERT_TRUE(sub.is_ok());
  const Changes& ch = sub.value().changes;
  ASSERT_EQ(ch.ended.size(), 1u);
  EXPECT_EQ(ch.ended[0].lease.id, newer.id);
  EXPECT_EQ(ch.ended[0].reason, EndReason::kPreempted);
  ASSERT_EQ(ch.granted.size(), 1u);
  EXPECT_EQ(ch.granted[0].lease.placement[0].device, newer.placement[0].device);
  EXPECT_TRUE(s.lease(older.id).has_value());
  EXPECT_FALSE(s.lease(newer.id).has_value());
}

TEST(PoolPreemption, OffByDefault) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());
  Request low = req(1);
  low.priority = kPriorityLow;
  Lease l = placed(s.submit(low));
  Request high = req(1);
  high.priority = kPriorityHigh;
  auto sub = s.submit(high);
  EXPECT_TRUE(sub.value().changes.ended.empty());
  EXPECT_TRUE(sub.value().changes.granted.empty());
  EXPECT_TRUE(s.lease(l.id).has_value());
}

TEST(PoolPreemption, SparesLeasesOnDevicesTheRequestCannotUse) {
  ManualClock clock;
  PoolConfig c;
  c.preemption = true;
  Scheduler s(c, clock);
  ServerInfo mixed = server("m", 1);
  mixed.devices.push_back(Device{1, "cpu", 80, 16 * kGiB, {}});
  ASSERT_TRUE(s.register_server(mixed).is_ok());
  Request on_gpu = req(1, 0, "batch");
  on_gpu.priority = kPriorityLow;
  Lease gpu = placed(s.submit(on_gpu));
  Request on_cpu = on_gpu;
  on_cpu.kind = KindWanted::kCpu;
  Lease cpu = placed(s.submit(on_cpu));  // newer, so it would go first
  Request high = req(1, 0, "urgent");
  high.priority = kPriorityHigh;
  auto sub = s.submit(high);
  ASSERT_EQ(sub.value().changes.ended.size(), 1u);
  EXPECT_EQ(sub.value().changes.ended[0].lease.id, gpu.id);
  EXPECT_TRUE(s.lease(cpu.id).has_value());
}

TEST(PoolPreemption, TakesTheFewestLeasesThatMakeRoom) {
  ManualClock clock;
  PoolConfig c;
  c.preemption = true;
  Scheduler s(c, clock);
  // Server a: two low leases of half a device each; server b: one low
  // lease of a whole device. A whole device for high priority costs one
  // lease on b, not two on a.
  ServerInfo a = server("a", 1);
  a.devices[0].slices = {Slice{0, 80 * kGiB, 1.0, 2}};
  ASSERT_TRUE(s.register_server(a).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 1)).is_ok());
  Request half = req(1, 40 * kGiB, "batch");
  half.priority = kPriorityLow;
  placed(s.submit(half));
  placed(s.submit(half));
  Request whole = req(1, 0, "batch");
  whole.priority = kPriorityLow;
  Lease on_b = placed(s.submit(whole));
  ASSERT_EQ(on_b.placement[0].server_id, "b");
  Request high = req(1, 0, "urgent");
  high.priority = kPriorityHigh;
  auto sub = s.submit(high);
  ASSERT_EQ(sub.value().changes.ended.size(), 1u);
  EXPECT_EQ(sub.value().changes.ended[0].lease.id, on_b.id);
  EXPECT_EQ(placed(sub).placement[0].server_id, "b");
}

}  // namespace
}  // namespace rgpu::pool
