// The server's pure handshake: version negotiation, feature bits and the
// grant, fed encoded messages directly (no transport).
#include <gtest/gtest.h>

#include <cstring>

#include "handshake.h"
#include "rgpu/protocol/negotiation.h"

namespace rgpu::server {
namespace {

namespace auth = protocol::auth;
using Kind = Handshake::Step::Kind;

struct HelloSpec {
  uint32_t newest = wire::PROTOCOL_VERSION;
  uint32_t oldest = 0;  // 0: a hello from before version ranges
  uint64_t features = 0;
  Resources request;
  auth::Nonce nonce{};
  bool insists_on_integrity = false;
  bool admin = false;  // an operator's request (list sessions) instead of a session
  std::string tenant = "alice";
};

std::vector<std::byte> hello(const HelloSpec& spec) {
  capnp::MallocMessageBuilder b(protocol::kSmallMessageWords);
  auto h = b.initRoot<wire::Envelope>().initHello();
  h.setProtocolVersion(spec.newest);
  h.setMinProtocolVersion(spec.oldest);
  h.setFeatures(spec.features);
  h.setIntegrity(spec.insists_on_integrity);
  h.setTenant(spec.tenant);
  if (spec.admin) protocol::write_admin_request({protocol::AdminCommand::kListSessions, 0}, h.initAdmin());
  h.setClientNonce(kj::arrayPtr(spec.nonce.data(), spec.nonce.size()));
  auto r = h.initRequest();
  r.setDevices(spec.request.devices);
  r.setMemoryBytes(spec.request.memory_bytes);
  r.setLeaseSeconds(spec.request.lease_seconds);
  r.setLease(spec.request.lease);
  auto words = protocol::encode(b);
  auto bytes = protocol::as_bytes(words);
  return {bytes.begin(), bytes.end()};
}

// The refusing welcome of a kRefuse step: its text and the server's range.
struct Refusal {
  std::string text;
  protocol::VersionRange server;
};
Refusal read_refusal(const Handshake::Step& step) {
  auto d = protocol::decode(step.message);
  EXPECT_TRUE(d.is_ok());
  if (!d.is_ok()) return {};
  auto w = d.value()->envelope().getWelcome();
  EXPECT_FALSE(w.getAccepted());
  return {w.getRefusal(), {w.getMinProtocolVersion(), w.getMaxProtocolVersion()}};
}

Offer two_devices() {
  Offer offer;
  offer.devices = 2;
  offer.device_memory = 2ull << 30;
  return offer;
}

TEST(VersionRange, HighestCommonVersion) {
  using protocol::VersionRange;
  EXPECT_EQ(protocol::highest_common({3, 7}, {3, 3}), 3u);
  EXPECT_EQ(protocol::highest_common({3, 7}, {4, 9}), 7u);
  EXPECT_EQ(protocol::highest_common({1, 2}, {3, 3}), std::nullopt);
  EXPECT_EQ(protocol::highest_common({5, 3}, {3, 5}), std::nullopt) << "malformed";
  EXPECT_EQ(protocol::highest_common({0, 0}, {3, 3}), std::nullopt);
  const VersionRange old = protocol::stated_range(2, 0);
  EXPECT_EQ(old.min, 2u);
  EXPECT_EQ(old.max, 2u);
  EXPECT_EQ(VersionRange({1, 2}).describe(), "1 to 2");
  EXPECT_EQ(VersionRange({3, 3}).describe(), "3");
}

TEST(Handshake, ANewerClientIsAcceptedAtTheServersVersion) {
  auth::KeyRing none;
  Handshake hs(none, 4096, two_devices());
  HelloSpec spec;
  spec.oldest = 3;
  spec.newest = 7;
  spec.features = ~uint64_t{0};
  const auto step = hs.on_message(hello(spec), false);
  ASSERT_EQ(step.kind, Kind::kWelcome) << step.reason;
  const Terms& t = step.client.terms;
  EXPECT_EQ(t.version, wire::PROTOCOL_VERSION);
  EXPECT_EQ(t.server_versions.min, wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(t.server_versions.max, wire::PROTOCOL_VERSION);
  EXPECT_EQ(t.features, protocol::kBuildFeatures) << "only what both have";

  capnp::MallocMessageBuilder b;
  auto welcome = b.initRoot<wire::Envelope>().initWelcome();
  t.write(welcome);
  EXPECT_EQ(welcome.getProtocolVersion(), wire::PROTOCOL_VERSION);
  EXPECT_EQ(welcome.getMinProtocolVersion(), wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(welcome.getMaxProtocolVersion(), wire::PROTOCOL_VERSION);
  EXPECT_EQ(welcome.getFeatures(), protocol::kBuildFeatures);
  EXPECT_EQ(welcome.getGranted().getDevices(), 2u);
}

TEST(Handshake, PicksTheHighestVersionBothSpeak) {
  auth::KeyRing none;
  Offer offer = two_devices();
  offer.versions = {3, 5};
  offer.features = protocol::kFeatureBulkPayload | protocol::kFeatureInvoke;
  Handshake hs(none, 4096, offer);
  HelloSpec spec;
  spec.oldest = 4;
  spec.newest = 7;
  spec.features = protocol::kFeatureInvoke | protocol::kFeatureTypedHandles;
  const auto step = hs.on_message(hello(spec), false);
  ASSERT_EQ(step.kind, Kind::kWelcome) << step.reason;
  EXPECT_EQ(step.client.terms.version, 5u);
  EXPECT_EQ(step.client.terms.features, protocol::kFeatureInvoke);
}

TEST(Handshake, AnOlderClientIsRefusedWithBothRangesNamed) {
  auth::KeyRing none;
  Offer offer = two_devices();
  offer.versions = {3, 4};
  Handshake hs(none, 4096, offer);
  HelloSpec spec;
  spec.oldest = 1;
  spec.newest = 2;
  const auto step = hs.on_message(hello(spec), false);
  ASSERT_EQ(step.kind, Kind::kRefuse);
  const Refusal r = read_refusal(step);
  EXPECT_NE(r.text.find("protocol versions 1 to 2"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("protocol versions 3 to 4"), std::string::npos) << r.text;
  EXPECT_EQ(r.server.min, 3u);
  EXPECT_EQ(r.server.max, 4u);
}

TEST(Handshake, AClientOfTypedEventCallsIsRefused) {
  // Protocol 3 carried events as typed calls, which this build no longer
  // reads: such a client is refused at the door, not answered "not known".
  auth::KeyRing none;
  Handshake hs(none, 4096, two_devices());
  HelloSpec spec;
  spec.oldest = 3;
  spec.newest = 3;
  const auto step = hs.on_message(hello(spec), false);
  ASSERT_EQ(step.kind, Kind::kRefuse);
  const Refusal r = read_refusal(step);
  EXPECT_NE(r.text.find("protocol version 3"), std::string::npos) << r.text;
  EXPECT_EQ(r.server.min, 4u);
}

TEST(Handshake, AHelloWithoutARangeSpeaksOneVersion) {
  auth::KeyRing none;
  {
    Handshake hs(none, 4096, two_devices());
    HelloSpec spec;  // newest = this build's version, no oldest
    const auto step = hs.on_message(hello(spec), false);
    ASSERT_EQ(step.kind, Kind::kWelcome) << step.reason;
    EXPECT_EQ(step.client.terms.version, wire::PROTOCOL_VERSION);
  }
  {
    Handshake hs(none, 4096, two_devices());
    HelloSpec spec;
    spec.newest = 2;
    const auto step = hs.on_message(hello(spec), false);
    ASSERT_EQ(step.kind, Kind::kRefuse);
    EXPECT_NE(read_refusal(step).text.find("protocol version 2,"), std::string::npos) << step.reason;
  }
}

TEST(Handshake, AMalformedRangeIsRefused) {
  auth::KeyRing none;
  Handshake hs(none, 4096, two_devices());
  HelloSpec spec;
  spec.oldest = 5;
  spec.newest = 3;
  const auto step = hs.on_message(hello(spec), false);
  ASSERT_EQ(step.kind, Kind::kRefuse);
  EXPECT_NE(step.reason.find("malformed protocol version range"), std::string::npos) << step.reason;
}

TEST(Handshake, TheVersionIsCheckedBeforeTheChallengeAndTheRequestAfterTheProof) {
  auto keys = auth::KeyRing::parse("alice alice-key\n", "test");
  ASSERT_TRUE(keys.is_ok());
  HelloSpec spec;
  spec.nonce = auth::random_nonce().value();
  spec.features = protocol::kBuildFeatures;  // a peer from another host must be able to seal
  {
    Handshake hs(keys.value(), 4096, two_devices());
    HelloSpec old = spec;
    old.newest = 1;
    EXPECT_EQ(hs.on_message(hello(old), false).kind, Kind::kRefuse) << "no challenge for a version it cannot speak";
  }
  Handshake hs(keys.value(), 4096, two_devices());
  spec.request.devices = 3;
  const auto challenge = hs.on_message(hello(spec), false);
  ASSERT_EQ(challenge.kind, Kind::kSend) << challenge.reason;
  auto d = protocol::decode(challenge.message);
  ASSERT_TRUE(d.is_ok());
  auth::Nonce server_nonce{};
  auto n = d.value()->envelope().getChallenge().getServerNonce();
  ASSERT_EQ(n.size(), server_nonce.size());
  std::memcpy(server_nonce.data(), n.begin(), n.size());
  const auth::Proof proof = auth::client_proof("alice-key", "alice", spec.nonce, server_nonce);
  capnp::MallocMessageBuilder b;
  b.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
  auto words = protocol::encode(b);
  const auto step = hs.on_message(protocol::as_bytes(words), false);
  ASSERT_EQ(step.kind, Kind::kRefuse);
  EXPECT_NE(step.reason.find("asks for 3 devices; this server has 2"), std::string::npos) << step.reason;
}

// The server's nonce from a challenge step, and the step the proof made of
// `secret` for `identity` over both nonces leads to.
auth::Nonce challenge_nonce(const Handshake::Step& challenge) {
  auth::Nonce server_nonce{};
  auto d = protocol::decode(challenge.message);
  EXPECT_TRUE(d.is_ok());
  if (!d.is_ok()) return server_nonce;
  auto n = d.value()->envelope().getChallenge().getServerNonce();
  EXPECT_EQ(n.size(), server_nonce.size());
  if (n.size() == server_nonce.size()) std::memcpy(server_nonce.data(), n.begin(), n.size());
  return server_nonce;
}
Handshake::Step prove(Handshake& hs, std::string_view secret, std::string_view identity, const auth::Nonce& mine,
                      const auth::Nonce& server_nonce) {
  const auth::Proof proof = auth::client_proof(secret, identity, mine, server_nonce);
  capnp::MallocMessageBuilder b;
  b.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
  auto words = protocol::encode(b);
  return hs.on_message(protocol::as_bytes(words), false);
}

// An operator's hello is always challenged, for the admin key alone and the
// admin identity; a tenant's key, or the admin key for a tenant, fails.
TEST(Handshake, AnOperatorProvesTheAdminKey) {
  auto keys = auth::KeyRing::parse("alice alice-key\n", "test");
  ASSERT_TRUE(keys.is_ok());
  const std::string admin_key = "root-key";
  Offer offer = two_devices();
  offer.admin_key = &admin_key;
  HelloSpec spec;
  spec.nonce = auth::random_nonce().value();
  spec.features = protocol::kBuildFeatures;
  spec.admin = true;
  struct Attempt {
    std::string secret, identity;
    bool good;
  };
  const Attempt attempts[] = {{"root-key", auth::kAdminIdentity, true},
                              {"alice-key", auth::kAdminIdentity, false},
                              {"root-key", "alice", false},
                              {"alice-key", "alice", false}};
  for (const Attempt& a : attempts) {
    SCOPED_TRACE(a.secret + " for " + a.identity);
    Handshake hs(keys.value(), 4096, offer, /*local_peer=*/true);
    const auto challenge = hs.on_message(hello(spec), false);
    ASSERT_EQ(challenge.kind, Kind::kSend) << challenge.reason;
    const auth::Nonce server_nonce = challenge_nonce(challenge);
    const auto step = prove(hs, a.secret, a.identity, spec.nonce, server_nonce);
    if (!a.good) {
      ASSERT_EQ(step.kind, Kind::kRefuse);
      EXPECT_NE(read_refusal(step).text.find("wrong admin key"), std::string::npos) << step.reason;
      continue;
    }
    ASSERT_EQ(step.kind, Kind::kAdmin) << step.reason;
    EXPECT_EQ(step.admin.command, protocol::AdminCommand::kListSessions);
    EXPECT_EQ(step.client.tenant, auth::kAdminIdentity);
    const auth::Proof theirs = auth::server_proof("root-key", auth::kAdminIdentity, spec.nonce, server_nonce);
    EXPECT_EQ(step.server_proof, std::vector<uint8_t>(theirs.begin(), theirs.end()));
    EXPECT_EQ(hs.on_message(hello(spec), false).kind, Kind::kRefuse) << "nothing after the answer";
  }
}

// Without --admin-key-file every operator request is refused, naming the
// option, even on a server without tenant keys; with one, such a server
// still challenges the operator. No tenant may take the admin identity.
TEST(Handshake, OperatorRequestsNeedTheServersAdminKey) {
  auth::KeyRing none;
  HelloSpec spec;
  spec.nonce = auth::random_nonce().value();
  spec.admin = true;
  Handshake off(none, 4096, two_devices(), true);
  const auto refused = off.on_message(hello(spec), false);
  ASSERT_EQ(refused.kind, Kind::kRefuse);
  EXPECT_NE(read_refusal(refused).text.find("--admin-key-file"), std::string::npos) << refused.reason;

  const std::string admin_key = "root-key";
  Offer offer = two_devices();
  offer.admin_key = &admin_key;
  Handshake keyless(none, 4096, offer, true);
  EXPECT_EQ(keyless.on_message(hello(spec), false).kind, Kind::kSend) << "challenged, not welcomed";

  HelloSpec as_admin;
  as_admin.tenant = auth::kAdminIdentity;
  Handshake tenant(none, 4096, offer, true);
  const auto bad = tenant.on_message(hello(as_admin), false);
  ASSERT_EQ(bad.kind, Kind::kRefuse);
  EXPECT_NE(read_refusal(bad).text.find("bad tenant name"), std::string::npos) << bad.reason;
}

// Per-message integrity: the server's mode, where the peer is and what the
// client can and insists on decide; the challenge announces it, and the
// welcome step carries both directions' keys, as the client derives them.
struct IntegrityCase {
  protocol::IntegrityMode mode;
  bool local;
  bool can;
  bool insists;
  // Expected: refused (with this in the reason), or sealed or not.
  const char* refused;
  bool sealed;
};

TEST(Handshake, IntegrityIsDecidedAtTheHelloAndKeyedByTheProof) {
  using M = protocol::IntegrityMode;
  const IntegrityCase cases[] = {
      {M::kAuto, true, true, false, nullptr, false},   // a local peer stays unsealed
      {M::kAuto, false, true, false, nullptr, true},   // another host's is sealed
      {M::kAuto, true, true, true, nullptr, true},     // unless the client insists
      {M::kAuto, false, false, false, "cannot", false},  // a client that cannot seal, from another host
      {M::kOn, true, true, false, nullptr, true},
      {M::kOn, true, false, false, "cannot", false},
      {M::kOff, false, true, false, nullptr, false},
      {M::kOff, true, true, true, "--integrity off", false},
  };
  auto keys = auth::KeyRing::parse("alice alice-key\n", "test");
  ASSERT_TRUE(keys.is_ok());
  for (const IntegrityCase& c : cases) {
    SCOPED_TRACE("mode " + std::to_string(static_cast<int>(c.mode)) + " local " + std::to_string(c.local) +
                 " can " + std::to_string(c.can) + " insists " + std::to_string(c.insists));
    Offer offer = two_devices();
    offer.integrity = c.mode;
    Handshake hs(keys.value(), 4096, offer, c.local);
    HelloSpec spec;
    spec.nonce = auth::random_nonce().value();
    spec.features = c.can ? protocol::kBuildFeatures : 0;
    spec.insists_on_integrity = c.insists;
    const auto challenge = hs.on_message(hello(spec), false);
    if (c.refused != nullptr) {
      ASSERT_EQ(challenge.kind, Kind::kRefuse);
      EXPECT_NE(read_refusal(challenge).text.find(c.refused), std::string::npos) << challenge.reason;
      continue;
    }
    ASSERT_EQ(challenge.kind, Kind::kSend) << challenge.reason;
    auto d = protocol::decode(challenge.message);
    ASSERT_TRUE(d.is_ok());
    auto ch = d.value()->envelope().getChallenge();
    EXPECT_EQ(ch.getIntegrity(), c.sealed);
    auth::Nonce server_nonce{};
    std::memcpy(server_nonce.data(), ch.getServerNonce().begin(), server_nonce.size());
    const auth::Proof proof = auth::client_proof("alice-key", "alice", spec.nonce, server_nonce);
    capnp::MallocMessageBuilder b;
    b.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
    auto words = protocol::encode(b);
    const auto step = hs.on_message(protocol::as_bytes(words), false);
    ASSERT_EQ(step.kind, Kind::kWelcome) << step.reason;
    ASSERT_EQ(step.seal.has_value(), c.sealed);
    if (c.sealed) {
      const auth::SealKeys mine = auth::seal_keys("alice-key", "alice", spec.nonce, server_nonce);
      EXPECT_EQ(step.seal->client_to_server, mine.client_to_server);
      EXPECT_EQ(step.seal->server_to_client, mine.server_to_client);
      EXPECT_NE(mine.client_to_server, mine.server_to_client);
      EXPECT_NE(mine.client_to_server, auth::client_proof("alice-key", "alice", spec.nonce, server_nonce));
    }
  }
}

// Without keys there is nothing to derive session keys from: a client that
// insists is refused, saying why; others are welcomed unsealed.
TEST(Handshake, IntegrityNeedsKeys) {
  auth::KeyRing none;
  Offer offer = two_devices();
  HelloSpec spec;
  spec.features = protocol::kBuildFeatures;
  Handshake plain(none, 4096, offer, false);
  const auto welcomed = plain.on_message(hello(spec), false);
  ASSERT_EQ(welcomed.kind, Kind::kWelcome) << welcomed.reason;
  EXPECT_FALSE(welcomed.seal.has_value());
  spec.insists_on_integrity = true;
  Handshake insisting(none, 4096, offer, false);
  const auto refused = insisting.on_message(hello(spec), false);
  ASSERT_EQ(refused.kind, Kind::kRefuse);
  EXPECT_NE(read_refusal(refused).text.find("needs keys"), std::string::npos) << refused.reason;
}

TEST(Grant, EveryDeviceAndTheMemoryLimit) {
  Offer offer = two_devices();
  auto g = grant(Resources{}, offer);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g.value().devices, 2u);
  EXPECT_EQ(g.value().memory_bytes, 0u) << "no limit configured";
  EXPECT_EQ(g.value().lease_seconds, 0u);

  Resources request;
  request.devices = 1;
  request.memory_bytes = 1ull << 30;
  request.lease_seconds = 60;
  request.lease = "opaque";
  offer.memory_limit = 1ull << 30;
  g = grant(request, offer);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g.value().devices, 2u) << "today every device";
  EXPECT_EQ(g.value().memory_bytes, 1ull << 30);
  EXPECT_TRUE(g.value().lease.empty());

  request.memory_bytes = 256ull << 20;
  g = grant(request, offer);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g.value().memory_bytes, 256ull << 20) << "the smaller of the request and the limit";
  request.memory_bytes = (1ull << 30) + 1;
  EXPECT_FALSE(grant(request, offer).is_ok()) << "one byte above the limit";
}

TEST(Grant, MoreThanTheServerHasIsRefused) {
  Resources request;
  request.devices = 3;
  auto g = grant(request, two_devices());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("asks for 3 devices; this server has 2"), std::string::npos);
  request = {};
  request.memory_bytes = 3ull << 30;
  g = grant(request, two_devices());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("grants at most 2147483648"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace rgpu::server
