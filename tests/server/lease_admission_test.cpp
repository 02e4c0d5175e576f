// Pool mode at rgpud's door: the handshake asks the lease gate and admits
// exactly what a lease grants; the slice table gives exactly the lease's
// slices (the pool's slice 0 of an uncut device is the whole device).
#include <gtest/gtest.h>

#include "handshake.h"
#include "slices.h"

namespace rgpu::server {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Accepts the token "good" (device 1, slice 0, 64 MiB, share 0.5) granted
// to tenant "default", and "mallorys", the same granted to "mallory".
class FakeGate final : public LeaseGate {
 public:
  Result<LeaseGrant> check(std::string_view token) override {
    ++calls;
    if (token != "good" && token != "mallorys") return invalid_argument("lease token: signature does not match");
    return LeaseGrant{7, token == "good" ? "default" : "mallory", {LeasedSlice{1, 0, 64 * kMiB, 0.5f}}};
  }
  int calls = 0;
};

std::vector<std::byte> hello(const std::string& lease) {
  capnp::MallocMessageBuilder b(protocol::kSmallMessageWords);
  auto h = b.initRoot<wire::Envelope>().initHello();
  h.setProtocolVersion(wire::PROTOCOL_VERSION);
  h.setMinProtocolVersion(wire::PROTOCOL_VERSION);
  h.initRequest().setLease(lease);
  auto words = protocol::encode(b);
  auto bytes = protocol::as_bytes(words);
  return {bytes.begin(), bytes.end()};
}

TEST(LeaseAdmission, HandshakeAdmitsOnlyAVerifiedLease) {
  protocol::auth::KeyRing keys;
  FakeGate gate;
  Offer offer;
  offer.devices = 2;
  offer.lease_gate = &gate;
  {
    Handshake h(keys, 1 << 16, offer);
    auto step = h.on_message(hello("good"), false);
    ASSERT_EQ(step.kind, Handshake::Step::Kind::kWelcome) << step.reason;
    ASSERT_TRUE(step.client.terms.lease.has_value());
    EXPECT_EQ(step.client.terms.lease->id, 7u);
  }
  {
    Handshake h(keys, 1 << 16, offer);
    auto step = h.on_message(hello("forged"), false);
    EXPECT_EQ(step.kind, Handshake::Step::Kind::kRefuse);
    EXPECT_NE(step.reason.find("lease refused: lease token: signature"), std::string::npos) << step.reason;
  }
  {
    Handshake h(keys, 1 << 16, offer);
    auto step = h.on_message(hello(""), false);
    EXPECT_EQ(step.kind, Handshake::Step::Kind::kRefuse);
    EXPECT_NE(step.reason.find("needs a lease"), std::string::npos) << step.reason;
  }
  {
    // Another tenant's lease, presented by tenant "default".
    Handshake h(keys, 1 << 16, offer);
    auto step = h.on_message(hello("mallorys"), false);
    EXPECT_EQ(step.kind, Handshake::Step::Kind::kRefuse);
    EXPECT_NE(step.reason.find("was granted to tenant mallory, not to default"), std::string::npos) << step.reason;
  }
  EXPECT_EQ(gate.calls, 3);
}

TEST(LeaseAdmission, SliceTableGivesExactlyTheLeasedSlices) {
  SharingOptions o;
  o.slicing.push_back(parse_slicing("1:256M@0.5,256M@0.5").value());
  auto table = SliceTable::make({1024 * kMiB, 1024 * kMiB}, o).value();
  // Device 0 is uncut: the pool's slice 0 is the whole device.
  auto whole = table->admit_leased({LeasedSlice{0, 0, 100 * kMiB, 0}});
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_EQ(whole.value().first.at(0).slice, -1);
  EXPECT_EQ(whole.value().first.at(0).quota, 100 * kMiB);
  // Device 1's second cut, at the lease's smaller share.
  auto cut = table->admit_leased({LeasedSlice{1, 1, 256 * kMiB, 0.25f}});
  ASSERT_TRUE(cut.is_ok()) << cut.status().to_string();
  EXPECT_EQ(cut.value().first.at(0).slice, 1);
  EXPECT_FLOAT_EQ(cut.value().first.at(0).share, 0.25f);
  // That cut holds one session: a second lease on it is refused, by name.
  auto again = table->admit_leased({LeasedSlice{1, 1, 256 * kMiB, 0}});
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("device 1 slice 1"), std::string::npos);
  // Slices that do not exist, or more memory than the slice has.
  EXPECT_FALSE(table->admit_leased({LeasedSlice{0, 1, 0, 0}}).is_ok());
  EXPECT_FALSE(table->admit_leased({LeasedSlice{1, 5, 0, 0}}).is_ok());
  EXPECT_FALSE(table->admit_leased({LeasedSlice{1, 0, 512 * kMiB, 0}}).is_ok());
  // Released with its admission.
  cut.value().second.reset();
  EXPECT_TRUE(table->admit_leased({LeasedSlice{1, 1, 256 * kMiB, 0}}).is_ok());
}

}  // namespace
}  // namespace rgpu::server
