// fp16 and bf16 conversions: exact widening, round-to-nearest-even narrowing,
// and the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convert.h"

namespace rgpu::cpublas {
namespace {

TEST(ConvertTest, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = uint16_t(bits);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN
    EXPECT_EQ(h, float_to_half(half_to_float(h))) << std::hex << bits;
  }
}

TEST(ConvertTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(0x3c00, float_to_half(1.0f + 0x1p-11f));          // tie: to even (1.0)
  EXPECT_EQ(0x3c02, float_to_half(1.0f + 3 * 0x1p-11f));      // tie: to even (1 + 2^-9)
  EXPECT_EQ(0x3c01, float_to_half(1.0f + 0x1p-11f + 0x1p-20f));  // above the tie: up
  EXPECT_EQ(0x7bff, float_to_half(65504.0f));
  EXPECT_EQ(0x7bff, float_to_half(65519.0f));
  EXPECT_EQ(0x7c00, float_to_half(65520.0f));  // rounds past the largest half
  EXPECT_EQ(0xfc00, float_to_half(-std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0x0001, float_to_half(0x1p-24f));  // smallest subnormal
  EXPECT_EQ(0x0000, float_to_half(0x1p-25f));  // tie with zero: to even (zero)
  EXPECT_EQ(0x0001, float_to_half(0x1.8p-25f));
  EXPECT_EQ(0x8000, float_to_half(-0.0f));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(0x1p-24f, half_to_float(0x0001));
  EXPECT_EQ(65504.0f, half_to_float(0x7bff));
}

TEST(ConvertTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(0x3f80, float_to_bf16(1.0f + 0x1p-8f));              // tie: to even
  EXPECT_EQ(0x3f82, float_to_bf16(1.0f + 3 * 0x1p-8f));          // tie: to even (up)
  EXPECT_EQ(0x3f81, float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f));   // above the tie
  EXPECT_EQ(0x7f80, float_to_bf16(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0x7f80, float_to_bf16(std::numeric_limits<float>::max()));  // overflows to infinity
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(1.5f, bf16_to_float(0x3fc0));
}

}  // namespace
}  // namespace rgpu::cpublas
