// The handle layout (rgpu/protocol/handles.h): kind, server tag and serial
// in one place, and the int form a library's int handle (a cuFFT plan) uses.
#include "rgpu/protocol/handles.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace rgpu::protocol {
namespace {

constexpr auto kPlan = static_cast<HandleKind>(static_cast<uint8_t>(HandleKind::kFirstLibraryKind) + 5);

TEST(Handles, ServerTagsLeaveKindAndSerialAlone) {
  const uint64_t h = make_handle(HandleKind::kStream, kFirstMintedSerial + 77);
  EXPECT_EQ(with_server(h, 0), h) << "server 0 is untagged";
  for (uint64_t server : {1ull, 7ull, 254ull}) {
    const uint64_t t = with_server(h, server);
    EXPECT_NE(t, h);
    EXPECT_EQ(server_of(t), server);
    EXPECT_EQ(kind_of(t), HandleKind::kStream);
    EXPECT_EQ(without_server(t), h);
    EXPECT_EQ(with_server(t, 0), h) << "retagging replaces the tag";
  }
  EXPECT_EQ(with_server(0, 3), 0u) << "no handle stays no handle";
  // The primary contexts' serials lie below the tag bits.
  EXPECT_EQ(server_of(primary_context(kMaxDevices - 1)), 0u);
}

TEST(Handles, IntFormRoundTripsAndIsNeverNegative) {
  for (uint64_t server : {0ull, 1ull, 127ull}) {
    for (uint64_t serial : {kFirstMintedSerial, uint64_t{0x123456}, kIntSerialLimit - 1}) {
      const uint64_t h = with_server(make_handle(kPlan, serial), server);
      int32_t v = -1;
      ASSERT_TRUE(to_int_form(h, &v)) << server << " " << serial;
      EXPECT_GE(v, 0);
      EXPECT_EQ(from_int_form(kPlan, v), h);
    }
  }
}

TEST(Handles, IntFormRefusesWhatDoesNotFit) {
  int32_t v = 42;
  EXPECT_FALSE(to_int_form(make_handle(kPlan, kIntSerialLimit), &v)) << "serial past 24 bits";
  EXPECT_FALSE(to_int_form(with_server(make_handle(kPlan, 0x200), kIntServerLimit), &v)) << "server past 7 bits";
  EXPECT_EQ(v, 42) << "left untouched";
}

}  // namespace
}  // namespace rgpu::protocol
