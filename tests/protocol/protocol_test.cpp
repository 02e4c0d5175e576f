// Wire codec: round trips, orphan-adopted batches, and malformed input.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "rgpu/protocol/codec.h"

namespace rgpu::protocol {
namespace {

TEST(Codec, HelloRoundTrip) {
  capnp::MallocMessageBuilder b;
  auto hello = b.initRoot<wire::Envelope>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setAuthToken("secret");
  hello.setPid(4242);
  auto words = encode(b);
  auto decoded = decode(as_bytes(words));
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  auto env = decoded.value()->envelope();
  ASSERT_EQ(env.which(), wire::Envelope::HELLO);
  EXPECT_EQ(env.getHello().getProtocolVersion(), wire::PROTOCOL_VERSION);
  EXPECT_EQ(std::string(env.getHello().getAuthToken().cStr()), "secret");
  EXPECT_EQ(env.getHello().getPid(), 4242u);
}

// The client builds calls as orphans and adopts them into the batch at flush.
TEST(Codec, BatchOfAdoptedOrphansKeepsOrderAndContent) {
  capnp::MallocMessageBuilder b;
  std::vector<capnp::Orphan<wire::Call>> calls;
  for (uint64_t i = 0; i < 100; ++i) {
    auto orphan = b.getOrphanage().newOrphan<wire::Call>();
    auto c = orphan.get();
    c.setId(i + 1);
    c.setCtx(7);
    auto m = c.initMemset();
    m.setDst(0x1000 + i);
    m.setValue(static_cast<uint32_t>(i));
    m.setElementSize(4);
    m.setCount(i * 3);
    calls.push_back(kj::mv(orphan));
  }
  auto list = b.initRoot<wire::Envelope>().initBatch().initCalls(100);
  for (unsigned i = 0; i < 100; ++i) list[i].adoptCall(kj::mv(calls[i]));
  auto words = encode(b);
  auto decoded = decode(as_bytes(words));
  ASSERT_TRUE(decoded.is_ok());
  auto got = decoded.value()->envelope().getBatch().getCalls();
  ASSERT_EQ(got.size(), 100u);
  for (unsigned i = 0; i < 100; ++i) {
    auto c = got[i].getCall();
    EXPECT_EQ(c.getId(), i + 1);
    ASSERT_EQ(c.which(), wire::Call::MEMSET);
    EXPECT_EQ(c.getMemset().getDst(), 0x1000u + i);
    EXPECT_EQ(c.getMemset().getCount(), i * 3ull);
  }
}

TEST(Codec, UnalignedInputIsCopiedNotRejected) {
  capnp::MallocMessageBuilder b;
  b.initRoot<wire::Envelope>().initReply().setId(99);
  auto words = encode(b);
  std::vector<std::byte> shifted(words.size() * 8 + 1);
  std::memcpy(shifted.data() + 1, words.begin(), words.size() * 8);
  auto decoded = decode(std::span<const std::byte>(shifted.data() + 1, words.size() * 8));
  ASSERT_TRUE(decoded.is_ok());
  EXPECT_EQ(decoded.value()->envelope().getReply().getId(), 99u);
}

TEST(Codec, MalformedInputIsAnErrorNotACrash) {
  EXPECT_FALSE(decode({}).is_ok());
  std::vector<std::byte> odd(13);
  EXPECT_EQ(decode(odd).status().kind(), ErrorKind::kInvalidArgument);
  // A segment table that claims more than there is.
  std::vector<uint32_t> lying = {0, 1000, 0, 0};
  EXPECT_FALSE(decode(std::span<const std::byte>(reinterpret_cast<const std::byte*>(lying.data()), 16)).is_ok());
  // Random garbage either fails to decode or fails validation; never crashes.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint64_t> junk(1 + rng() % 32);
    for (auto& w : junk) w = rng();
    junk[0] &= 0x0000000f00000000ull;  // one segment, small size: get past framing sometimes
    auto d = decode(std::span<const std::byte>(reinterpret_cast<const std::byte*>(junk.data()), junk.size() * 8));
    if (d.is_ok()) (void)d.value()->envelope().which();
  }
}

TEST(Codec, TruncatedMessageFails) {
  capnp::MallocMessageBuilder b;
  auto w = b.initRoot<wire::Envelope>().initWelcome();
  w.setRefusal(std::string(500, 'x'));
  auto words = encode(b);
  auto bytes = as_bytes(words);
  EXPECT_FALSE(decode(bytes.subspan(0, bytes.size() - 64)).is_ok());
}

}  // namespace
}  // namespace rgpu::protocol
