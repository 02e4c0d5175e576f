// Signed leases: what a server accepts at hello and what it refuses.
#include <gtest/gtest.h>

#include <vector>

#include "rgpu/pool/lease_token.h"

namespace rgpu::pool {
namespace {

constexpr std::string_view kKey = "a shared pool secret";

Lease sample() {
  Lease l;
  l.id = 42;
  l.tenant = "research";
  l.priority = kPriorityHigh;
  l.issued = 1'000'000;
  l.expiry = 1'600'000;
  l.nonce = "00ff";
  l.placement = {PlacedDevice{"gpu-a", "10.0.0.1:7000", 0, 1, 8ull << 30, 0.5},
                 PlacedDevice{"gpu-b", "10.0.0.2:7000", 3, 0, 16ull << 30, 1.0}};
  return l;
}

VerifyOptions at(Millis now, ReplayCache* cache = nullptr) {
  VerifyOptions o;
  o.now = now;
  o.replay = cache;
  return o;
}

std::string token_of(const Lease& l) {
  auto t = sign_lease(l, kKey);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? t.value() : std::string();
}

TEST(PoolLeaseToken, CanonicalTextIsStableAndComplete) {
  const std::string text = canonical_lease_text(sample());
  EXPECT_EQ(text,
            "rgpu-lease-v1\nid=42\ntenant=research\npriority=20\nissued=1000000\nexpiry=1600000\nnonce=00ff\n"
            "device=gpu-a 10.0.0.1:7000 0 1 8589934592 5000\n"
            "device=gpu-b 10.0.0.2:7000 3 0 17179869184 10000\n");
}

TEST(PoolLeaseToken, AGenuineLeaseVerifiesOnce) {
  ReplayCache cache;
  const std::string token = token_of(sample());
  auto got = verify_lease(token, kKey, at(1'200'000, &cache));
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got.value().id, 42u);
  EXPECT_EQ(got.value().tenant, "research");
  ASSERT_EQ(got.value().placement.size(), 2u);
  EXPECT_EQ(got.value().placement[1].server_id, "gpu-b");
  EXPECT_EQ(got.value().placement[1].device, 3u);
  EXPECT_EQ(got.value().placement[0].memory_bytes, 8ull << 30);
  EXPECT_DOUBLE_EQ(got.value().placement[0].share, 0.5);

  auto again = verify_lease(token, kKey, at(1'200'001, &cache));
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("already presented"), std::string::npos);
  // Without a cache (a caller that checks replay itself) it still verifies.
  EXPECT_TRUE(verify_lease(token, kKey, at(1'200'002)).is_ok());
}

TEST(PoolLeaseToken, ForgedLeasesAreRefused) {
  const std::string token = token_of(sample());
  // Another key.
  EXPECT_EQ(verify_lease(token, "another secret", at(1'200'000)).status().kind(), ErrorKind::kInvalidArgument);
  // Each field changed after signing: more memory, another tenant, a later
  // expiry, another server, another slice.
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{{"8589934592", "9589934592"},
                                                                          {"tenant=research", "tenant=rezearch"},
                                                                          {"expiry=1600000", "expiry=9600000"},
                                                                          {"gpu-b", "gpu-c"},
                                                                          {" 0 1 ", " 0 2 "}}) {
    std::string forged = token;
    const size_t at_pos = forged.find(from);
    ASSERT_NE(at_pos, std::string::npos) << from;
    forged.replace(at_pos, from.size(), to);
    auto r = verify_lease(forged, kKey, at(1'200'000));
    ASSERT_FALSE(r.is_ok()) << from;
    EXPECT_NE(r.status().message().find("signature"), std::string::npos) << r.status().message();
  }
  // A mac flipped in one digit.
  std::string bad_mac = token;
  char& c = bad_mac[bad_mac.size() - 2];
  c = c == '0' ? '1' : '0';
  EXPECT_FALSE(verify_lease(bad_mac, kKey, at(1'200'000)).is_ok());
  // A device line dropped (fewer devices than granted is still a forgery).
  std::string dropped = token;
  const size_t line = dropped.find("device=gpu-b");
  dropped.erase(line, dropped.find('\n', line) - line + 1);
  EXPECT_FALSE(verify_lease(dropped, kKey, at(1'200'000)).is_ok());
}

TEST(PoolLeaseToken, ExpiredAndFutureLeasesAreRefused) {
  const std::string token = token_of(sample());
  auto expired = verify_lease(token, kKey, at(1'600'000));
  ASSERT_FALSE(expired.is_ok());
  EXPECT_EQ(expired.status().kind(), ErrorKind::kFailed);
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos);
  EXPECT_TRUE(verify_lease(token, kKey, at(1'599'999)).is_ok());
  // Issued a little in the future is clock skew; far in the future is not.
  EXPECT_TRUE(verify_lease(token, kKey, at(1'000'000 - 30'000)).is_ok());
  EXPECT_FALSE(verify_lease(token, kKey, at(1'000'000 - 30'001)).is_ok());
}

TEST(PoolLeaseToken, MalformedInputIsAnErrorNotACrash) {
  const std::string token = token_of(sample());
  for (size_t n = 0; n < token.size(); n += 7) {
    EXPECT_FALSE(verify_lease(token.substr(0, n), kKey, at(1'200'000)).is_ok()) << n;
  }
  EXPECT_FALSE(verify_lease(std::string(kMaxLeaseToken + 1, 'x'), kKey, at(1'200'000)).is_ok());
  EXPECT_FALSE(verify_lease(token, "", at(1'200'000)).is_ok());
  // Correctly signed but not canonical (a leading zero) is still refused:
  // one lease has one spelling.
  std::string body = canonical_lease_text(sample());
  body.replace(body.find("id=42"), 5, "id=042");
  EXPECT_FALSE(verify_lease(body + "mac=" + std::string(64, '0') + "\n", kKey, at(1'200'000)).is_ok());
}

TEST(PoolLeaseToken, SigningNeedsANonceAndAKey) {
  Lease l = sample();
  EXPECT_FALSE(sign_lease(l, "").is_ok());
  l.nonce.clear();
  EXPECT_FALSE(sign_lease(l, kKey).is_ok());
  auto n1 = random_lease_nonce(), n2 = random_lease_nonce();
  ASSERT_TRUE(n1.is_ok() && n2.is_ok());
  EXPECT_EQ(n1.value().size(), 64u);
  EXPECT_NE(n1.value(), n2.value());
  l.nonce = n1.value();
  l.placement[0].server_id = "has space";
  EXPECT_FALSE(sign_lease(l, kKey).is_ok());
}

TEST(PoolLeaseToken, ReplayCacheForgetsExpiredAndRefusesWhenFull) {
  ReplayCache cache(2);
  EXPECT_TRUE(cache.insert(1, "n", 100, 0).value());
  EXPECT_FALSE(cache.insert(1, "n", 100, 0).value());
  EXPECT_TRUE(cache.insert(1, "other", 100, 0).value()) << "same id, another nonce: another lease";
  auto full = cache.insert(2, "n", 100, 50);
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().kind(), ErrorKind::kOverloaded);
  EXPECT_TRUE(cache.insert(2, "n", 300, 100).value()) << "both earlier entries expired at 100";
  EXPECT_EQ(cache.size(), 1u);
}

TEST(PoolRequestProof, BindsEveryFieldTheTimeAndTheNonce) {
  Request r;
  r.devices = 2;
  r.memory_bytes = 1u << 30;
  r.share = 0.25;
  r.kind = KindWanted::kCpu;
  r.min_compute_capability = 80;
  r.priority = 7;
  r.tenant = "alice";
  r.timeout_ms = 5000;
  const std::string nonce(64, 'a');
  const std::string proof = request_proof("s3cret", r, "train", "host1", 1000, nonce);
  EXPECT_EQ(proof.size(), 64u);
  EXPECT_TRUE(verify_request_proof("s3cret", proof, r, "train", "host1", 1000, nonce, 1000).is_ok());
  EXPECT_FALSE(verify_request_proof("other", proof, r, "train", "host1", 1000, nonce, 1000).is_ok());
  // Any field changed on the path breaks the proof.
  std::vector<Request> changed(9, r);
  changed[0].devices = 3;
  changed[1].memory_bytes += 1;
  changed[2].share = 0.5;
  changed[3].kind = KindWanted::kAny;
  changed[4].min_compute_capability = 90;
  changed[5].priority = 8;
  changed[6].tenant = "bob";
  changed[7].timeout_ms = 1;
  changed[8].devices = 1;
  for (const Request& c : changed) {
    EXPECT_FALSE(verify_request_proof("s3cret", proof, c, "train", "host1", 1000, nonce, 1000).is_ok());
  }
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "trainX", "host1", 1000, nonce, 1000).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host2", 1000, nonce, 1000).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host1", 1001, nonce, 1001).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host1", 1000, std::string(64, 'b'), 1000).is_ok());
  // Too old, too new, no proof, a short nonce.
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host1", 1000, nonce, 1000 + 31'000).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host1", 1000, nonce, 1000 - 31'000).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", "", r, "train", "host1", 1000, nonce, 1000).is_ok());
  EXPECT_FALSE(verify_request_proof("s3cret", proof, r, "train", "host1", 1000, "abc", 1000).is_ok());
}

TEST(PoolEndSessionProof, BindsServerLeaseReasonAndTime) {
  const std::string proof = end_session_proof("k", "s1", 42, "preempted", 5000);
  EXPECT_TRUE(verify_end_session_proof("k", proof, "s1", 42, "preempted", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("other", proof, "s1", 42, "preempted", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", proof, "s2", 42, "preempted", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", proof, "s1", 43, "preempted", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", proof, "s1", 42, "expired", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", proof, "s1", 42, "preempted", 5001, 5001).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", proof, "s1", 42, "preempted", 5000, 5000 + 31'000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("k", "", "s1", 42, "preempted", 5000, 5000).is_ok());
  EXPECT_FALSE(verify_end_session_proof("", proof, "s1", 42, "preempted", 5000, 5000).is_ok());
}

}  // namespace
}  // namespace rgpu::pool
