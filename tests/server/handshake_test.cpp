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
};

std::vector<std::byte> hello(const HelloSpec& spec) {
  capnp::MallocMessageBuilder b(protocol::kSmallMessageWords);
  auto h = b.initRoot<wire::Envelope>().initHello();
  h.setProtocolVersion(spec.newest);
  h.setMinProtocolVersion(spec.oldest);
  h.setFeatures(spec.features);
  h.setTenant("alice");
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
  EXPECT_EQ(t.version, 3u);
  EXPECT_EQ(t.server_versions.min, wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(t.server_versions.max, wire::PROTOCOL_VERSION);
  EXPECT_EQ(t.features, protocol::kBuildFeatures) << "only what both have";

  capnp::MallocMessageBuilder b;
  auto welcome = b.initRoot<wire::Envelope>().initWelcome();
  t.write(welcome);
  EXPECT_EQ(welcome.getProtocolVersion(), 3u);
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
