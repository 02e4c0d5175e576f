// The scheduler's calls for several instances sharing one pool: leases
// adopted from another instance, grants taken back into the queue, and
// disjoint lease ids. No etcd here: these are the scheduler's own rules.
#include <gtest/gtest.h>

#include "pool_test_util.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool {
namespace {

using testing::kGiB;
using testing::placed;
using testing::req;
using testing::server;

Lease foreign(LeaseId id, const std::string& srv, uint32_t device, uint64_t memory = 80 * kGiB, double share = 1.0) {
  Lease l;
  l.id = id;
  l.tenant = "other";
  l.issued = 0;
  l.expiry = 1000;
  l.placement.push_back({srv, srv + ":7000", device, 0, memory, share});
  return l;
}

TEST(SharedState, AdoptedLeaseHoldsItsSlices) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("s1", 2)).is_ok());
  ASSERT_TRUE(s.adopt(foreign(900, "s1", 0)).is_ok());
  // Device 0 is taken: the next whole device is 1, then nothing.
  Lease mine = placed(s.submit(req(1)));
  EXPECT_EQ(mine.placement[0].device, 1u);
  Result<Submitted> none = s.submit(req(1));
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none.value().changes.granted.empty());
  // Freed elsewhere: the waiting request is placed on device 0.
  Result<Changes> freed = s.release(900);
  ASSERT_TRUE(freed.is_ok());
  ASSERT_EQ(freed.value().granted.size(), 1u);
  EXPECT_EQ(freed.value().granted[0].lease.placement[0].device, 0u);
}

TEST(SharedState, AdoptRefusesWhatDoesNotFitAndChangesNothing) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("s1", 1)).is_ok());
  EXPECT_FALSE(s.adopt(foreign(1, "nowhere", 0)).is_ok());
  EXPECT_FALSE(s.adopt(foreign(2, "s1", 7)).is_ok());
  Lease two = foreign(3, "s1", 0);
  two.placement.push_back(two.placement[0]);  // one slice twice
  EXPECT_FALSE(s.adopt(two).is_ok());
  ASSERT_TRUE(s.adopt(foreign(4, "s1", 0, 60 * kGiB, 0.5)).is_ok());
  // 20 GiB left: a 40 GiB hold does not fit, and nothing was taken.
  EXPECT_FALSE(s.adopt(foreign(5, "s1", 0, 40 * kGiB, 0.25)).is_ok());
  EXPECT_TRUE(s.adopt(foreign(6, "s1", 0, 20 * kGiB, 0.5)).is_ok());
  EXPECT_EQ(s.leases().size(), 2u);
}

TEST(SharedState, AdoptingAHeldLeaseMovesItsExpiry) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("s1", 1)).is_ok());
  Lease l = foreign(7, "s1", 0);
  ASSERT_TRUE(s.adopt(l).is_ok());
  l.expiry = 5000;
  ASSERT_TRUE(s.adopt(l).is_ok());
  EXPECT_EQ(s.lease(7)->expiry, 5000);
  clock.set(1000);
  EXPECT_TRUE(s.tick().ended.empty());  // the old expiry no longer ends it
  clock.set(5000);
  ASSERT_EQ(s.tick().ended.size(), 1u);
}

TEST(SharedState, RequeuedGrantWaitsAgainUnderItsTicket) {
  ManualClock clock(100);
  PoolConfig cfg;
  cfg.queue_timeout_ms = 0;
  Scheduler s(cfg, clock);
  ASSERT_TRUE(s.register_server(server("s1", 1)).is_ok());
  Result<Submitted> first = s.submit(req(1));
  ASSERT_TRUE(first.is_ok());
  const Lease l = placed(first);
  clock.set(200);
  Result<Submitted> second = s.submit(req(1));  // waits
  ASSERT_TRUE(second.is_ok());
  // The first grant lost a race elsewhere: back in the queue, ahead of the
  // second (older ticket), with its original wait.
  ASSERT_TRUE(s.requeue(l.id, first.value().ticket, req(1), 100).is_ok());
  EXPECT_FALSE(s.lease(l.id).has_value());
  ASSERT_EQ(s.queue().size(), 2u);
  EXPECT_EQ(s.queue()[0].ticket, first.value().ticket);
  EXPECT_EQ(s.queue()[0].since, 100);
  EXPECT_EQ(s.position(second.value().ticket)->ahead, 1u);
  Changes ch = s.tick();
  ASSERT_EQ(ch.granted.size(), 1u);
  EXPECT_EQ(ch.granted[0].ticket, first.value().ticket);
  EXPECT_NE(ch.granted[0].lease.id, l.id);
  EXPECT_FALSE(s.requeue(l.id, first.value().ticket, req(1), 100).is_ok());  // not held any more
}

TEST(SharedState, LeaseIdsStartWhereTold) {
  ManualClock clock;
  Scheduler s(PoolConfig{}, clock);
  ASSERT_TRUE(s.register_server(server("s1", 2)).is_ok());
  s.set_next_lease_id(5ull << 24);
  EXPECT_EQ(placed(s.submit(req(1))).id, 5ull << 24);
  EXPECT_EQ(placed(s.submit(req(1))).id, (5ull << 24) + 1);
}

}  // namespace
}  // namespace rgpu::pool
