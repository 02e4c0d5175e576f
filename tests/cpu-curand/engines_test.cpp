// The cuRAND stand-in's bit generators (cpu-libs/curand/src/engines.h):
// Philox4x32-10 against the published known-answer vectors, and every
// engine's jump to a position against stepping there.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engines.h"

namespace rgpu::cpurand {
namespace {

TEST(CpuCurandEngines, PhiloxMatchesItsKnownAnswers) {
  // The known-answer vectors of the Philox4x32-10 definition (counter
  // words c0..c3, key words k0 k1).
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10(0, 0, 0), (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10(~0ull, ~0ull, ~0ull), (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10(0x85a308d3243f6a88ull, 0x0370734413198a2eull, 0x299f31d0a4093822ull),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

class Jump : public ::testing::TestWithParam<Engine::Kind> {};

TEST_P(Jump, JumpingToAPositionEqualsSteppingThere) {
  for (uint64_t seed : {0ull, 1ull, 0xfeedfacecafebeefull}) {
    Engine stepped(GetParam(), seed, 0);
    std::vector<uint32_t> seq(20000);
    for (auto& w : seq) w = stepped.next();
    for (uint64_t pos : {0ull, 1ull, 3ull, 4ull, 4095ull, 4096ull, 4097ull, 12345ull, 19990ull}) {
      Engine jumped(GetParam(), seed, pos);
      for (uint64_t i = pos; i < std::min<uint64_t>(pos + 10, seq.size()); ++i) {
        ASSERT_EQ(jumped.next(), seq[i]) << "seed " << seed << " position " << pos << " word " << i;
      }
    }
  }
}

TEST_P(Jump, SkippingEqualsStepping) {
  Engine stepped(GetParam(), 77, 5), skipped(GetParam(), 77, 5);
  for (uint64_t n : {0ull, 1ull, 3ull, 5000ull, 123456ull}) {
    for (uint64_t i = 0; i < n; ++i) stepped.next();
    skipped.skip(n);
    for (int i = 0; i < 9; ++i) ASSERT_EQ(skipped.next(), stepped.next()) << n;
  }
  // A far jump lands where jumping from the seed does.
  Engine far(GetParam(), 77, (1ull << 40) + 3);
  Engine near(GetParam(), 77, 1ull << 40);
  near.skip(3);
  EXPECT_EQ(far.next(), near.next());
}

TEST_P(Jump, SeedsGiveDifferentSequences) {
  Engine a(GetParam(), 1, 0), b(GetParam(), 2, 0);
  int same = 0;
  for (int i = 0; i < 64; ++i) same += a.next() == b.next();
  EXPECT_LT(same, 2);
}

INSTANTIATE_TEST_SUITE_P(Engines, Jump,
                         ::testing::Values(Engine::Kind::kXorwow, Engine::Kind::kMrg32k3a, Engine::Kind::kPhilox),
                         [](const ::testing::TestParamInfo<Engine::Kind>& info) {
                           switch (info.param) {
                             case Engine::Kind::kXorwow: return std::string("xorwow");
                             case Engine::Kind::kMrg32k3a: return std::string("mrg32k3a");
                             case Engine::Kind::kPhilox: return std::string("philox");
                           }
                           return std::string("unknown");
                         });

}  // namespace
}  // namespace rgpu::cpurand
