// Placement: each policy, memory, share and session fit on slices, device
// kind and compute capability in a mixed pool, several devices at once.
#include <gtest/gtest.h>

#include <set>

#include "pool_test_util.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool {
namespace {

using testing::kGiB;
using testing::placed;
using testing::req;
using testing::server;
using testing::sliced_server;

PoolConfig with_policy(Policy p) {
  PoolConfig c;
  c.policy = p;
  return c;
}

TEST(PoolPlacement, BinpackFillsOneServerBeforeTheNext) {
  ManualClock clock;
  Scheduler s(with_policy(Policy::kBinpack), clock);
  ASSERT_TRUE(s.register_server(server("a", 4)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 4)).is_ok());
  std::set<uint32_t> devices;
  for (int i = 0; i < 3; ++i) {
    Lease l = placed(s.submit(req(1)));
    ASSERT_EQ(l.placement.size(), 1u);
    EXPECT_EQ(l.placement[0].server_id, "a");
    devices.insert(l.placement[0].device);
  }
  EXPECT_EQ(devices.size(), 3u) << "three leases, three distinct devices";
  // Four devices no longer fit on a; they go to b whole.
  Lease big = placed(s.submit(req(4)));
  ASSERT_EQ(big.placement.size(), 4u);
  for (const auto& d : big.placement) EXPECT_EQ(d.server_id, "b");
  // The last free device of a is still taken before anything else.
  EXPECT_EQ(placed(s.submit(req(1))).placement[0].server_id, "a");
}

TEST(PoolPlacement, SpreadAlternatesBetweenServers) {
  ManualClock clock;
  Scheduler s(with_policy(Policy::kSpread), clock);
  ASSERT_TRUE(s.register_server(server("a", 4)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 4)).is_ok());
  std::vector<std::string> got;
  for (int i = 0; i < 4; ++i) got.push_back(placed(s.submit(req(1))).placement[0].server_id);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "a", "b"}));
}

TEST(PoolPlacement, LeastLoadedFollowsReportedUse) {
  ManualClock clock;
  Scheduler s(with_policy(Policy::kLeastLoaded), clock);
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 2)).is_ok());
  ASSERT_TRUE(s.heartbeat("a", {{0, 70 * kGiB, 0.9}, {1, 0, 0.8}}).is_ok());
  ASSERT_TRUE(s.heartbeat("b", {{0, 0, 0.1}, {1, 0, 0.0}}).is_ok());
  Lease first = placed(s.submit(req(1, kGiB)));
  EXPECT_EQ(first.placement[0].server_id, "b");
  EXPECT_EQ(first.placement[0].device, 1u) << "the idler device of b";
  ASSERT_TRUE(s.heartbeat("a", {{0, 0, 0.0}, {1, 0, 0.0}}).is_ok());
  ASSERT_TRUE(s.heartbeat("b", {{0, 60 * kGiB, 0.95}, {1, 60 * kGiB, 0.9}}).is_ok());
  EXPECT_EQ(placed(s.submit(req(1, kGiB))).placement[0].server_id, "a");
}

TEST(PoolPlacement, MemoryFitsSlicesExactly) {
  ManualClock clock;
  Scheduler s(with_policy(Policy::kBinpack), clock);
  ServerInfo info = server("a", 1);
  info.devices[0].slices = {Slice{0, 20 * kGiB, 0.25, 4}, Slice{1, 60 * kGiB, 0.75, 4}};
  ASSERT_TRUE(s.register_server(info).is_ok());
  Lease l30 = placed(s.submit(req(1, 30 * kGiB)));
  EXPECT_EQ(l30.placement[0].slice, 1u);
  EXPECT_EQ(l30.placement[0].memory_bytes, 30 * kGiB);
  // Binpack takes the tightest slice that fits: 15 GiB goes to the 20 GiB one.
  EXPECT_EQ(placed(s.submit(req(1, 15 * kGiB))).placement[0].slice, 0u);
  // 40 GiB fits nowhere now (30 and 5 GiB left): it waits.
  auto waits = s.submit(req(1, 40 * kGiB));
  ASSERT_TRUE(waits.is_ok());
  EXPECT_TRUE(waits.value().changes.granted.empty());
  // Exactly the 30 GiB left on slice 1 fits.
  EXPECT_EQ(placed(s.submit(req(1, 30 * kGiB))).placement[0].slice, 1u);
  EXPECT_EQ(s.stats().queued, 1u);
}

TEST(PoolPlacement, SessionsAndSharesBoundASlice) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(sliced_server("a", 1, 2)).is_ok());
  placed(s.submit(req(1, kGiB)));
  placed(s.submit(req(1, kGiB)));
  EXPECT_TRUE(s.submit(req(1, kGiB)).value().changes.granted.empty()) << "two sessions at most";

  Scheduler t(PoolConfig{}, clock);
  ASSERT_TRUE(t.register_server(sliced_server("b", 1, 8)).is_ok());
  Request r = req(1, kGiB);
  r.share = 0.4;
  EXPECT_DOUBLE_EQ(placed(t.submit(r)).placement[0].share, 0.4);
  placed(t.submit(r));
  EXPECT_TRUE(t.submit(r).value().changes.granted.empty()) << "0.4 + 0.4 + 0.4 > 1";
  r.share = 0.2;
  placed(t.submit(r));
}

TEST(PoolPlacement, WholeSliceRequestIsExclusive) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(sliced_server("a", 2, 4)).is_ok());
  Lease whole = placed(s.submit(req(1, 0)));
  EXPECT_EQ(whole.placement[0].memory_bytes, 40 * kGiB) << "all of the slice";
  EXPECT_DOUBLE_EQ(whole.placement[0].share, 0.5);
  // A small request goes to the other slice; a second whole one waits.
  Lease small = placed(s.submit(req(1, kGiB)));
  EXPECT_NE(small.placement[0].slice, whole.placement[0].slice);
  EXPECT_TRUE(s.submit(req(1, 0)).value().changes.granted.empty()) << "slice 1 has a session";
}

TEST(PoolPlacement, AnUncutDeviceIsSharedWithinItsMemory) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 1)).is_ok());  // 80 GiB, no slices
  for (int i = 0; i < 4; ++i) {
    Lease l = placed(s.submit(req(1, 20 * kGiB)));
    EXPECT_EQ(l.placement[0].slice, 0u);
  }
  EXPECT_TRUE(s.submit(req(1, kGiB)).value().changes.granted.empty()) << "80 GiB are leased";
  EXPECT_TRUE(s.submit(req(1, 0)).value().changes.granted.empty()) << "not whole while others hold it";
}

TEST(PoolPlacement, KindAndCapabilityInAMixedPool) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("cpu", 2, "cpu", 80, 16 * kGiB)).is_ok());
  ASSERT_TRUE(s.register_server(server("a100", 1, "NVIDIA A100", 80, 40 * kGiB)).is_ok());
  ASSERT_TRUE(s.register_server(server("h100", 1, "NVIDIA H100", 90, 80 * kGiB)).is_ok());

  Request hopper = req(1);
  hopper.min_compute_capability = 90;
  EXPECT_EQ(placed(s.submit(hopper)).placement[0].server_id, "h100");

  Request any = req(1);
  any.kind = KindWanted::kAny;
  EXPECT_EQ(placed(s.submit(any)).placement[0].server_id, "a100") << "real GPUs before CPU devices";
  EXPECT_EQ(placed(s.submit(any)).placement[0].server_id, "cpu") << "CPU capacity once GPUs are taken";

  // NVIDIA only: never a CPU device, even though one is free.
  auto nv = s.submit(req(1));
  ASSERT_TRUE(nv.is_ok());
  EXPECT_TRUE(nv.value().changes.granted.empty());

  Request cpu = req(1);
  cpu.kind = KindWanted::kCpu;
  EXPECT_EQ(placed(s.submit(cpu)).placement[0].server_id, "cpu");

  Request blackwell = req(1);
  blackwell.kind = KindWanted::kAny;
  blackwell.min_compute_capability = 100;
  // No device of 10.0 or later, held or not: refused at once, not queued.
  auto never = s.submit(blackwell);
  ASSERT_FALSE(never.is_ok());
  EXPECT_NE(never.status().message().find("1 device of kind any, a whole slice, compute capability 10.0 or above "
                                          "asked; the pool has 4 devices on 3 servers: 1 NVIDIA A100 (40.0 GiB, 8.0), "
                                          "1 NVIDIA H100 (80.0 GiB, 9.0), 2 cpu (16.0 GiB)"),
            std::string::npos)
      << never.status().message();
  EXPECT_EQ(s.queue().size(), 1u) << "only the NVIDIA request waits";
  EXPECT_EQ(s.queue()[0].why, "1 device of kind nvidia, a whole slice asked, 0 free of 2; position 1");
}

TEST(PoolPlacement, SeveralDevicesSplitOnlyWhenAllowed) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("a", 2)).is_ok());
  ASSERT_TRUE(s.register_server(server("b", 2)).is_ok());
  Lease l = placed(s.submit(req(3)));
  ASSERT_EQ(l.placement.size(), 3u);
  std::set<std::pair<std::string, uint32_t>> distinct;
  for (const auto& d : l.placement) distinct.insert({d.server_id, d.device});
  EXPECT_EQ(distinct.size(), 3u);

  PoolConfig whole_servers;
  whole_servers.split_across_servers = false;
  Scheduler t(whole_servers, clock);
  ASSERT_TRUE(t.register_server(server("a", 2)).is_ok());
  ASSERT_TRUE(t.register_server(server("b", 2)).is_ok());
  // Three devices on one server, where no server has three: refused at once.
  auto never = t.submit(req(3));
  ASSERT_FALSE(never.is_ok());
  EXPECT_NE(never.status().message().find("no registered server could ever give this request: 3 devices"),
            std::string::npos)
      << never.status().message();
  EXPECT_EQ(placed(t.submit(req(2))).placement.size(), 2u);
  EXPECT_EQ(placed(t.submit(req(2))).placement.size(), 2u);
  // One more fits once a lease ends: it waits, and says why.
  EXPECT_TRUE(t.submit(req(2)).value().changes.granted.empty());
  ASSERT_EQ(t.queue().size(), 1u);
  EXPECT_EQ(t.queue()[0].why, "2 devices of kind nvidia, whole slices asked, 0 free of 4; position 1");
}

TEST(PoolPlacement, BadInputIsAnErrorNotACrash) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  EXPECT_EQ(s.submit(req(0)).status().kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(s.submit(req(kMaxDevicesPerRequest + 1)).status().kind(), ErrorKind::kInvalidArgument);
  Request r = req(1);
  r.share = 1.5;
  EXPECT_EQ(s.submit(r).status().kind(), ErrorKind::kInvalidArgument);
  r = req(1);
  r.tenant = "two words";
  EXPECT_EQ(s.submit(r).status().kind(), ErrorKind::kInvalidArgument);

  ServerInfo twice = server("a", 2);
  twice.devices[1].index = 0;
  EXPECT_EQ(s.register_server(twice).status().kind(), ErrorKind::kInvalidArgument);
  ServerInfo too_big = sliced_server("b", 2, 1);
  too_big.devices[0].slices[1].memory_bytes = 70 * kGiB;
  EXPECT_EQ(s.register_server(too_big).status().kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(s.heartbeat("nobody", {}).status().kind(), ErrorKind::kFailed);
  ASSERT_TRUE(s.register_server(server("c", 1)).is_ok());
  EXPECT_EQ(s.heartbeat("c", {{7, 0, 0.5}}).status().kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(s.heartbeat("c", {{0, 0, 2.0}}).status().kind(), ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace rgpu::pool
