// Several pool instances (a Scheduler and an EtcdStore each) on one real
// etcd: shared views, races for one slice, capacity freed elsewhere,
// servers whose liveness expires, and many racing rounds checked against
// the whole history in etcd.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "etcd_test_util.h"
#include "pool_test_util.h"
#include "rgpu/common/log.h"
#include "rgpu/pool/etcd_store.h"

namespace rgpu::pool {
namespace {

using testing::EtcdServer;
using testing::eventually;
using testing::req;
using testing::server;

PoolConfig test_config() {
  PoolConfig c;
  c.heartbeat_interval_ms = 500;
  c.heartbeat_timeout_ms = 2000;  // servers' and instances' etcd leases: 2 s
  c.queue_timeout_ms = 0;
  c.lease_ttl_ms = 3'600'000;
  return c;
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!etcd_.start(&why)) {
      if (testing::etcd_binary().empty() && !testing::strict_tests()) GTEST_SKIP() << why;
      FAIL() << why;
    }
  }
  std::unique_ptr<EtcdStore> open(const std::string& name, bool watch = true, PoolConfig config = test_config()) {
    EtcdStoreOptions o;
    o.prefix = prefix_;
    o.instance = name;
    o.watch = watch;
    Result<std::unique_ptr<EtcdStore>> s = EtcdStore::open(config, clock_, {{etcd_.endpoint()}, 2000}, o);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return s.is_ok() ? std::move(s.value()) : nullptr;
  }
  static bool has_server(const EtcdStore& s, const std::string& id) {
    for (const ServerView& v : s.servers()) {
      if (v.info.id == id) return true;
    }
    return false;
  }

  EtcdServer etcd_;
  SystemClock clock_;
  const std::string prefix_ = "/rgpu/pool/test/";
};

TEST_F(EtcdStoreTest, InstancesShareServersAndLeases) {
  auto a = open("a");
  auto b = open("b");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->first_lease_id(), b->first_lease_id());
  ASSERT_TRUE(a->register_server(server("s1", 2)).is_ok());
  ASSERT_TRUE(eventually([&] { return has_server(*b, "s1"); }, [] {}));

  Result<Submitted> got = a->submit(req(1));
  ASSERT_TRUE(got.is_ok());
  ASSERT_EQ(got.value().changes.granted.size(), 1u);
  const Lease l = got.value().changes.granted[0].lease;
  ASSERT_TRUE(eventually([&] { return b->lease(l.id).has_value(); }, [] {}));
  EXPECT_EQ(b->lease(l.id)->placement[0].server_id, "s1");

  // B places its own on what is left, never on A's device.
  Result<Submitted> other = b->submit(req(1));
  ASSERT_TRUE(other.is_ok());
  ASSERT_EQ(other.value().changes.granted.size(), 1u);
  EXPECT_NE(other.value().changes.granted[0].lease.placement[0].device, l.placement[0].device);

  ASSERT_TRUE(a->release(l.id).is_ok());
  EXPECT_TRUE(eventually([&] { return !b->lease(l.id).has_value(); }, [] {}));
  EXPECT_TRUE(testing::check_history(etcd_.endpoint(), prefix_).violations.empty());
}

TEST_F(EtcdStoreTest, TwoInstancesRacingForOneSliceExactlyOneWins) {
  auto a = open("a");
  auto b = open("b", /*watch=*/false);  // B's view goes stale on purpose
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->register_server(server("s1", 1)).is_ok());
  ASSERT_TRUE(b->sync().is_ok());
  ASSERT_TRUE(has_server(*b, "s1"));

  // Both believe the one device is free; A commits first.
  Result<Submitted> won = a->submit(req(1));
  ASSERT_TRUE(won.is_ok());
  ASSERT_EQ(won.value().changes.granted.size(), 1u);
  Result<Submitted> lost = b->submit(req(1));
  ASSERT_TRUE(lost.is_ok());
  EXPECT_TRUE(lost.value().changes.granted.empty()) << "the slice was granted twice";
  EXPECT_GE(b->counters().conflicts, 1u);
  // B re-planned from etcd: it now sees A's lease and waits.
  EXPECT_TRUE(b->lease(won.value().changes.granted[0].lease.id).has_value());
  size_t queued = 0;
  b->read([&](const Scheduler& s) { queued = s.queue().size(); });
  EXPECT_EQ(queued, 1u);

  // Freed by A: B's waiting request gets the slice at its next look.
  ASSERT_TRUE(a->release(won.value().changes.granted[0].lease.id).is_ok());
  ASSERT_TRUE(b->sync().is_ok());
  Changes ch = b->tick();
  ASSERT_EQ(ch.granted.size(), 1u);
  EXPECT_EQ(ch.granted[0].ticket, lost.value().ticket);

  const testing::HistoryReport h = testing::check_history(etcd_.endpoint(), prefix_);
  EXPECT_TRUE(h.violations.empty()) << h.violations.front();
  EXPECT_EQ(h.leases_created, 2u);
}

TEST_F(EtcdStoreTest, CapacityFreedElsewherePlacesQueuedRequests) {
  auto a = open("a");
  auto b = open("b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->register_server(server("s1", 1)).is_ok());
  Result<Submitted> held = a->submit(req(1));
  ASSERT_TRUE(held.is_ok());
  ASSERT_EQ(held.value().changes.granted.size(), 1u);
  const LeaseId id = held.value().changes.granted[0].lease.id;
  ASSERT_TRUE(eventually([&] { return b->lease(id).has_value(); }, [] {}));
  Result<Submitted> waits = b->submit(req(1));
  ASSERT_TRUE(waits.is_ok());
  ASSERT_TRUE(waits.value().changes.granted.empty());

  ASSERT_TRUE(a->release(id).is_ok());
  // The watch brings the release; B places its waiting request by itself
  // and hands the grant out at its next call.
  std::vector<Grant> got;
  ASSERT_TRUE(eventually([&] { return !got.empty(); },
                         [&] {
                           for (Grant& g : b->tick().granted) got.push_back(g);
                         }));
  EXPECT_EQ(got[0].ticket, waits.value().ticket);
  EXPECT_TRUE(eventually([&] { return a->lease(got[0].lease.id).has_value(); }, [] {}));
}

TEST_F(EtcdStoreTest, AnyInstanceRenewsAndReleases) {
  auto a = open("a");
  auto b = open("b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->register_server(server("s1", 1)).is_ok());
  Result<Submitted> held = a->submit(req(1));
  ASSERT_TRUE(held.is_ok());
  ASSERT_EQ(held.value().changes.granted.size(), 1u);
  const Lease l = held.value().changes.granted[0].lease;
  ASSERT_TRUE(eventually([&] { return b->lease(l.id).has_value(); }, [] {}));

  // The client came over to B: B renews, A sees the new expiry.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Result<Lease> renewed = b->renew(l.id);
  ASSERT_TRUE(renewed.is_ok()) << renewed.status().to_string();
  EXPECT_GT(renewed.value().expiry, l.expiry);
  EXPECT_TRUE(eventually([&] { return a->lease(l.id) && a->lease(l.id)->expiry == renewed.value().expiry; }, [] {}));

  ASSERT_TRUE(b->release(l.id).is_ok());
  EXPECT_TRUE(eventually([&] { return !a->lease(l.id).has_value(); }, [] {}));
  EXPECT_FALSE(b->release(l.id).is_ok());  // once
  EtcdClient c({{etcd_.endpoint()}, 2000});
  EXPECT_TRUE(c.range(prefix_ + "leases/", true).value().kvs.empty());
  EXPECT_TRUE(c.range(prefix_ + "slices/", true).value().kvs.empty());
}

TEST_F(EtcdStoreTest, ServerWhoseEtcdLeaseExpiresLeavesBothViews) {
  auto a = open("a");
  auto b = open("b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->register_server(server("quiet", 1)).is_ok());
  ASSERT_TRUE(b->register_server(server("busy", 1)).is_ok());
  ASSERT_TRUE(eventually([&] { return has_server(*a, "busy") && has_server(*b, "quiet"); }, [] {}));
  Result<Submitted> on_quiet = a->submit(req(1));
  ASSERT_TRUE(on_quiet.is_ok());
  ASSERT_EQ(on_quiet.value().changes.granted.size(), 1u);
  const Lease l = on_quiet.value().changes.granted[0].lease;
  // Binpack puts it on the first registered server.
  ASSERT_EQ(l.placement[0].server_id, "quiet");

  // "busy" heartbeats (through either instance); "quiet" never does. Its
  // etcd lease expires, etcd deletes its record, and both views drop it;
  // A, which serves the lease on it, reports the lease ended.
  std::vector<EndedLease> ended;
  auto poll = [&] {
    ASSERT_TRUE(b->heartbeat("busy", {}).is_ok());
    for (EndedLease& e : a->tick().ended) ended.push_back(e);
    (void)b->tick();
  };
  ASSERT_TRUE(eventually([&] { return !has_server(*a, "quiet") && !has_server(*b, "quiet"); }, poll));
  EXPECT_TRUE(has_server(*a, "busy"));
  EXPECT_TRUE(has_server(*b, "busy"));
  ASSERT_TRUE(eventually([&] { return !ended.empty(); }, poll));
  EXPECT_EQ(ended[0].lease.id, l.id);
  EXPECT_EQ(ended[0].reason, EndReason::kServerLost);
  EXPECT_FALSE(b->lease(l.id).has_value());
  EtcdClient c({{etcd_.endpoint()}, 2000});
  EXPECT_TRUE(eventually([&] { return c.range(prefix_ + "leases/", true).value().kvs.empty(); }, [] {}));
  // A heartbeat from the expired server is refused: it must register again.
  EXPECT_FALSE(a->heartbeat("quiet", {}).is_ok());
}

// Two instances on two threads, each placing and releasing as fast as it
// can on 8 devices that cannot hold all they ask for. Every grant either
// instance reports is checked against the leases both hold at that moment,
// and the whole history in etcd is replayed and checked afterwards.
TEST_F(EtcdStoreTest, RacingInstancesNeverGrantASliceTwice) {
  PoolConfig cfg = test_config();
  cfg.queue_timeout_ms = 200;
  auto a = open("a", true, cfg);
  auto b = open("b", true, cfg);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->register_server(server("s1", 4)).is_ok());
  ASSERT_TRUE(b->register_server(server("s2", 4)).is_ok());
  ASSERT_TRUE(eventually([&] { return a->servers().size() == 2 && b->servers().size() == 2; }, [] {}));

  std::mutex mu;
  std::map<std::string, LeaseId> holder;  // "server/device/slice" -> live lease
  std::vector<std::string> violations;
  std::atomic<size_t> grants{0};
  auto slot = [](const PlacedDevice& p) { return p.server_id + "/" + std::to_string(p.device) + "/" + std::to_string(p.slice); };
  auto granted = [&](const Lease& l) {
    std::lock_guard<std::mutex> lock(mu);
    for (const PlacedDevice& p : l.placement) {
      auto [it, fresh] = holder.emplace(slot(p), l.id);
      if (!fresh) violations.push_back(slot(p) + " granted to " + std::to_string(l.id) + " while " + std::to_string(it->second) + " holds it");
    }
    grants += 1;
  };
  auto releasing = [&](const Lease& l) {
    std::lock_guard<std::mutex> lock(mu);
    for (const PlacedDevice& p : l.placement) {
      auto it = holder.find(slot(p));
      if (it != holder.end() && it->second == l.id) holder.erase(it);
    }
  };
  auto run = [&](EtcdStore& s, const std::string& own_server, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<Lease> mine;
    auto take = [&](const Changes& ch) {
      for (const Grant& g : ch.granted) {
        granted(g.lease);
        mine.push_back(g.lease);
      }
      // Nothing should end a lease here (servers heartbeat, leases last an
      // hour); one that did would fail its release below.
      for (const EndedLease& e : ch.ended) ADD_FAILURE() << "lease " << e.lease.id << " ended: " << end_reason_name(e.reason);
    };
    auto last_beat = std::chrono::steady_clock::now();
    // Until both together have made 200 grants (bounded in time: etcd's
    // writes may be slow on a busy machine). An instance releasing takes
    // the capacity for its own queue first, so one of the two may starve.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (grants.load() < 200 && std::chrono::steady_clock::now() < until) {
      if (std::chrono::steady_clock::now() - last_beat > std::chrono::milliseconds(300)) {
        ASSERT_TRUE(s.heartbeat(own_server, {}).is_ok());
        last_beat = std::chrono::steady_clock::now();
      }
      Result<Submitted> r = s.submit(req(1 + rng() % 2));
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      take(r.value().changes);
      take(s.tick());
      if (!mine.empty() && rng() % 3 != 0) {
        const size_t i = rng() % mine.size();
        const Lease l = mine[i];
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
        releasing(l);
        Result<Changes> rel = s.release(l.id);
        ASSERT_TRUE(rel.is_ok()) << rel.status().to_string();
        take(rel.value());
      }
    }
    for (const Lease& l : mine) {
      releasing(l);
      ASSERT_TRUE(s.release(l.id).is_ok());
    }
  };
  std::thread ta([&] { run(*a, "s1", 1); });
  std::thread tb([&] { run(*b, "s2", 2); });
  ta.join();
  tb.join();
  // Grants the watch made after a thread's last look are released too,
  // until neither view holds anything.
  auto drain = [&] {
    for (EtcdStore* s : {a.get(), b.get()}) {
      for (const Grant& g : s->tick().granted) {
        granted(g.lease);
        releasing(g.lease);
        EXPECT_TRUE(s->release(g.lease.id).is_ok());
      }
    }
  };
  EXPECT_TRUE(eventually([&] { return a->leases().empty() && b->leases().empty(); }, drain));
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_GE(grants.load(), 200u);

  const testing::HistoryReport h = testing::check_history(etcd_.endpoint(), prefix_);
  EXPECT_TRUE(h.violations.empty()) << h.violations.size() << " violations, first: " << h.violations.front();
  EXPECT_GE(h.leases_created, grants.load());
  RGPU_INFO("etcd race grants=%zu conflicts_a=%llu conflicts_b=%llu", grants.load(),
            static_cast<unsigned long long>(a->counters().conflicts), static_cast<unsigned long long>(b->counters().conflicts));
  EtcdClient c({{etcd_.endpoint()}, 2000});
  EXPECT_TRUE(c.range(prefix_ + "slices/", true).value().kvs.empty());
}

}  // namespace
}  // namespace rgpu::pool
