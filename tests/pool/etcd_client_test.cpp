// The etcd client against a real etcd on loopback: keys, transactions,
// leases, the watch, and failover between endpoints.
#include <gtest/gtest.h>

#include "etcd_test_util.h"
#include "rgpu/pool/etcd_client.h"

namespace rgpu::pool {
namespace {

using testing::EtcdServer;

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!etcd_.start(&why)) {
      if (testing::etcd_binary().empty() && !testing::strict_tests()) GTEST_SKIP() << why;
      FAIL() << why;
    }
    client_ = std::make_unique<EtcdClient>(EtcdOptions{{etcd_.endpoint()}, 2000});
  }
  EtcdServer etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdClientTest, PutRangeEraseAndPrefixes) {
  // Bytes that base64 must carry: NUL, 0xff, '/'.
  const std::string odd_key = std::string("/p/bin\0\xff", 8);
  const std::string odd_value = std::string("v\0\x01\xfe", 4);
  ASSERT_TRUE(client_->put("/p/a", "1").is_ok());
  ASSERT_TRUE(client_->put("/p/b", "2").is_ok());
  ASSERT_TRUE(client_->put(odd_key, odd_value).is_ok());
  ASSERT_TRUE(client_->put("/q/c", "3").is_ok());

  Result<RangeResult> one = client_->range("/p/a");
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  ASSERT_EQ(one.value().kvs.size(), 1u);
  EXPECT_EQ(one.value().kvs[0].value, "1");
  EXPECT_GT(one.value().kvs[0].mod_revision, 0);

  Result<RangeResult> all = client_->range("/p/", true);
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all.value().kvs.size(), 3u);  // not /q/c
  bool found = false;
  for (const KeyValue& kv : all.value().kvs) found = found || (kv.key == odd_key && kv.value == odd_value);
  EXPECT_TRUE(found) << "binary key and value did not round-trip";

  ASSERT_TRUE(client_->erase("/p/", true).is_ok());
  EXPECT_TRUE(client_->range("/p/", true).value().kvs.empty());
  EXPECT_EQ(client_->range("/q/c").value().kvs.size(), 1u);
  EXPECT_TRUE(client_->range("/absent").value().kvs.empty());
}

TEST_F(EtcdClientTest, TransactionsCompareRevisions) {
  using T = EtcdCompare::Target;
  using R = EtcdCompare::Result;
  // Create-if-absent: the first wins, the second sees what is there.
  const std::vector<EtcdCompare> absent{{"/t/k", T::kModRevision, R::kEqual, 0, {}}};
  Result<TxnResult> first = client_->txn(absent, {EtcdOp::put("/t/k", "first")}, {EtcdOp::read("/t/k")});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(first.value().succeeded);
  Result<TxnResult> second = client_->txn(absent, {EtcdOp::put("/t/k", "second")}, {EtcdOp::read("/t/k")});
  ASSERT_TRUE(second.is_ok());
  EXPECT_FALSE(second.value().succeeded);
  ASSERT_EQ(second.value().ranges.size(), 1u);
  ASSERT_EQ(second.value().ranges[0].size(), 1u);
  EXPECT_EQ(second.value().ranges[0][0].value, "first");
  EXPECT_EQ(second.value().ranges[0][0].mod_revision, first.value().revision);

  // Compare-and-swap on the revision seen, then a stale one fails.
  const int64_t seen = first.value().revision;
  Result<TxnResult> cas = client_->txn({{"/t/k", T::kModRevision, R::kEqual, seen, {}}}, {EtcdOp::put("/t/k", "cas")});
  ASSERT_TRUE(cas.is_ok());
  EXPECT_TRUE(cas.value().succeeded);
  Result<TxnResult> stale = client_->txn({{"/t/k", T::kModRevision, R::kEqual, seen, {}}}, {EtcdOp::put("/t/k", "lost")});
  ASSERT_TRUE(stale.is_ok());
  EXPECT_FALSE(stale.value().succeeded);
  EXPECT_EQ(client_->range("/t/k").value().kvs[0].value, "cas");

  // Several keys in one transaction: all or nothing; a value compare.
  Result<TxnResult> multi = client_->txn({{"/t/k", T::kValue, R::kEqual, 0, "cas"}, {"/t/other", T::kVersion, R::kEqual, 0, {}}},
                                         {EtcdOp::put("/t/other", "x"), EtcdOp::erase("/t/k")});
  ASSERT_TRUE(multi.is_ok());
  EXPECT_TRUE(multi.value().succeeded);
  EXPECT_TRUE(client_->range("/t/k").value().kvs.empty());
  EXPECT_EQ(client_->range("/t/other").value().kvs.size(), 1u);

  // A malformed request is an error from etcd, not a crash: two puts of
  // one key in one transaction.
  Result<TxnResult> dup = client_->txn({}, {EtcdOp::put("/t/d", "1"), EtcdOp::put("/t/d", "2")});
  EXPECT_FALSE(dup.is_ok());
  EXPECT_EQ(dup.status().kind(), ErrorKind::kFailed);
}

TEST_F(EtcdClientTest, KeysOfAnExpiredLeaseVanish) {
  Result<int64_t> lease = client_->grant_lease(2);
  ASSERT_TRUE(lease.is_ok()) << lease.status().to_string();
  ASSERT_TRUE(client_->put("/l/alive", "x", lease.value()).is_ok());
  EXPECT_EQ(client_->range("/l/alive").value().kvs[0].lease, lease.value());
  Result<int64_t> ttl = client_->keep_alive(lease.value());
  ASSERT_TRUE(ttl.is_ok()) << ttl.status().to_string();
  EXPECT_GE(ttl.value(), 2);
  // No more renewals: the key goes by itself.
  EXPECT_TRUE(testing::eventually([&] { return client_->range("/l/alive").value().kvs.empty(); }, [] {}));
  Result<int64_t> late = client_->keep_alive(lease.value());
  ASSERT_FALSE(late.is_ok());
  EXPECT_EQ(late.status().kind(), ErrorKind::kFailed);

  // Revoking removes at once.
  Result<int64_t> other = client_->grant_lease(60);
  ASSERT_TRUE(other.is_ok());
  ASSERT_TRUE(client_->put("/l/revoked", "x", other.value()).is_ok());
  ASSERT_TRUE(client_->revoke_lease(other.value()).is_ok());
  EXPECT_TRUE(client_->range("/l/revoked").value().kvs.empty());
}

TEST_F(EtcdClientTest, WatchReportsEveryChangeInOrder) {
  Result<int64_t> start = client_->put("/w-outside", "x");
  ASSERT_TRUE(start.is_ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> seen;
  EtcdWatch watch({{etcd_.endpoint()}, 1000}, "/w/", start.value() + 1, [&](const WatchBatch& b) -> int64_t {
    std::lock_guard<std::mutex> lock(mu);
    for (const WatchEvent& e : b.events) seen.push_back(e);
    cv.notify_all();
    return 0;
  });
  ASSERT_TRUE(client_->put("/w/a", "1").is_ok());
  ASSERT_TRUE(client_->put("/elsewhere", "no").is_ok());
  ASSERT_TRUE(client_->put("/w/b", "2").is_ok());
  ASSERT_TRUE(client_->put("/w/a", "3").is_ok());
  ASSERT_TRUE(client_->erase("/w/b").is_ok());
  // Quiet for longer than the stream's read timeout: the reopened stream
  // must neither lose nor repeat events.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(client_->put("/w/c", "4").is_ok());
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() >= 5; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].kv.key, "/w/a");
  EXPECT_EQ(seen[0].kv.value, "1");
  EXPECT_EQ(seen[1].kv.key, "/w/b");
  EXPECT_EQ(seen[2].kv.value, "3");
  EXPECT_TRUE(seen[3].deleted);
  EXPECT_EQ(seen[3].kv.key, "/w/b");
  EXPECT_EQ(seen[4].kv.key, "/w/c");
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].kv.mod_revision, seen[i - 1].kv.mod_revision);
}

TEST_F(EtcdClientTest, FailsOverToTheNextEndpoint) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(testing::free_port());
  EtcdClient both({{dead, etcd_.endpoint()}, 1000});
  ASSERT_TRUE(both.put("/f/k", "v").is_ok());
  EXPECT_EQ(both.range("/f/k").value().kvs[0].value, "v");

  EtcdClient none({{dead}, 300});
  Result<RangeResult> r = none.range("/f/k");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kDisconnected);

  // The watch, too, moves on from an endpoint that does not answer.
  std::mutex mu;
  std::condition_variable cv;
  bool got = false;
  EtcdWatch watch({{dead, etcd_.endpoint()}, 1000}, "/f/", 1, [&](const WatchBatch& b) -> int64_t {
    std::lock_guard<std::mutex> lock(mu);
    got = got || !b.events.empty();
    cv.notify_all();
    return 0;
  });
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return got; }));
}

TEST_F(EtcdClientTest, DeadEtcdIsADisconnectedError) {
  etcd_.stop();
  // Returns (the call's deadline bounds it) with a status, no exception.
  Result<int64_t> r = client_->put("/x", "y");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kDisconnected);
}

}  // namespace
}  // namespace rgpu::pool
