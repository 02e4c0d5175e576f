// The args codec: layout, bounds, and refusal of malformed input.
#include "rgpu/protocol/args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace rgpu::protocol {
namespace {

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

TEST(ArgsCodec, ScalarsAreEightByteLittleEndianItems) {
  ArgWriter w;
  w.scalar(int32_t{-2});
  w.scalar(uint16_t{0x1234});
  w.scalar(1.5f);
  ASSERT_EQ(24u, w.bytes().size());
  EXPECT_EQ(std::byte{0xfe}, w.bytes()[0]);
  EXPECT_EQ(std::byte{0xff}, w.bytes()[7]);  // sign-extended
  EXPECT_EQ(std::byte{0x34}, w.bytes()[8]);
  EXPECT_EQ(std::byte{0x12}, w.bytes()[9]);
  ArgReader r(view(w.bytes()));
  int32_t a = 0;
  uint16_t b = 0;
  float c = 0;
  ASSERT_TRUE(r.scalar(&a) && r.scalar(&b) && r.scalar(&c));
  EXPECT_EQ(-2, a);
  EXPECT_EQ(0x1234, b);
  EXPECT_EQ(1.5f, c);
  EXPECT_TRUE(r.finish());
}

TEST(ArgsCodec, BuffersAreLengthThenBytesPaddedToEight) {
  ArgWriter w;
  w.string("abc");
  ASSERT_EQ(16u, w.bytes().size());
  EXPECT_EQ(std::byte{3}, w.bytes()[0]);
  EXPECT_EQ(std::byte{'a'}, w.bytes()[8]);
  EXPECT_EQ(std::byte{0}, w.bytes()[15]);
  ArgReader r(view(w.bytes()));
  std::string_view s;
  ASSERT_TRUE(r.string(&s, 16));
  EXPECT_EQ("abc", s);
  EXPECT_TRUE(r.finish());
}

TEST(ArgsCodec, ValuesThatDoNotFitAreRefused) {
  ArgWriter w;
  w.u64(uint64_t{1} << 40);
  ArgReader r(view(w.bytes()));
  int32_t v = 7;
  EXPECT_FALSE(r.scalar(&v));
  EXPECT_EQ(7, v);
  EXPECT_TRUE(r.failed());
  uint64_t later = 0;
  EXPECT_FALSE(r.u64(&later)) << "a failed reader stays failed";

  ArgWriter b;
  b.u64(2);
  ArgReader rb(view(b.bytes()));
  bool flag = false;
  EXPECT_FALSE(rb.scalar(&flag));
}

TEST(ArgsCodec, TruncatedInputFailsAtEveryCut) {
  ArgWriter w;
  w.u64(5);
  w.string("hello, world");
  const auto& all = w.bytes();
  for (size_t cut = 0; cut < all.size(); ++cut) {
    ArgReader r(std::span<const std::byte>(all.data(), cut));
    uint64_t v = 0;
    std::string_view s;
    bool ok = r.u64(&v) && r.string(&s, 1024);
    EXPECT_FALSE(ok && r.finish()) << "cut at " << cut;
  }
}

TEST(ArgsCodec, OversizedLengthsAreRefused) {
  ArgWriter w;
  w.u64(~uint64_t{0});  // a length far past the input
  ArgReader r(view(w.bytes()));
  std::span<const std::byte> b;
  EXPECT_FALSE(r.buffer(&b, ~uint64_t{0}));

  ArgWriter small;
  small.string("abcdefgh");
  ArgReader limited(view(small.bytes()));
  std::string_view s;
  EXPECT_FALSE(limited.string(&s, 4)) << "longer than the caller's limit";
}

TEST(ArgsCodec, PaddingMustBeZeroAndTrailingBytesAreRefused) {
  ArgWriter w;
  w.string("a");
  auto bytes = w.take();
  bytes[12] = std::byte{1};
  ArgReader r(view(bytes));
  std::string_view s;
  EXPECT_FALSE(r.string(&s, 8));

  ArgWriter t;
  t.u64(1);
  t.u64(2);
  ArgReader rt(view(t.bytes()));
  uint64_t v = 0;
  ASSERT_TRUE(rt.u64(&v));
  EXPECT_FALSE(rt.finish()) << "an item left over";
}

}  // namespace
}  // namespace rgpu::protocol
