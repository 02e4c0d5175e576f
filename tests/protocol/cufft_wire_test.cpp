// cuFFT's geometry on the wire and the extents rgpud checks an execution
// against (rgpu/protocol/cufft_wire.h).
#include <gtest/gtest.h>

#include "rgpu/protocol/cufft_wire.h"

namespace rgpu::protocol::cufft {
namespace {

Geometry basic(int rank, std::initializer_list<int64_t> n, int32_t cufft_type, int64_t batch) {
  Geometry g;
  g.rank = rank;
  int i = 0;
  for (int64_t v : n) g.n[i++] = v;
  EXPECT_TRUE(types_of(cufft_type, &g.itype, &g.otype, &g.etype));
  g.batch = batch;
  return g;
}

constexpr int32_t kC2C = 0x29, kR2C = 0x2a, kC2R = 0x2c, kZ2Z = 0x69, kD2Z = 0x6a;

TEST(CufftWire, BasicLayoutsSpanWhatCufftReadsAndWrites) {
  // 1d C2C, batch 3: 3 * 12 complex floats each side.
  Geometry g = basic(1, {12}, kC2C, 3);
  EXPECT_EQ(kind_of(g), Kind::kC2C);
  EXPECT_EQ(extent_bytes(g, true, false), 3u * 12 * 8);
  EXPECT_EQ(extent_bytes(g, false, false), 3u * 12 * 8);
  // R2C: n reals in, n/2+1 complex out.
  g = basic(1, {10}, kR2C, 2);
  EXPECT_EQ(extent_bytes(g, true, false), 2u * 10 * 4);
  EXPECT_EQ(extent_bytes(g, false, false), 2u * 6 * 8);
  // In place the real rows are 2*(n/2+1) reals apart; the last row's
  // padding is not read.
  EXPECT_EQ(extent_bytes(g, true, true), (12u + 10) * 4);
  EXPECT_EQ(extent_bytes(g, false, true), 2u * 6 * 8);
  // C2R 2d: the last dimension is halved on the complex side only.
  g = basic(2, {5, 8}, kC2R, 1);
  EXPECT_EQ(extent_bytes(g, true, false), 5u * 5 * 8);
  EXPECT_EQ(extent_bytes(g, false, false), 5u * 8 * 4);
  // Double precision, 3d.
  g = basic(3, {2, 3, 4}, kD2Z, 1);
  EXPECT_EQ(extent_bytes(g, true, false), 24u * 8);
  EXPECT_EQ(extent_bytes(g, false, false), 2u * 3 * 3 * 16);
}

TEST(CufftWire, AdvancedLayoutsUseEmbedStrideAndDistance) {
  Geometry g = basic(2, {4, 6}, kZ2Z, 3);
  g.has_inembed = g.has_onembed = true;
  g.inembed[0] = 100;  // the outermost embed is not used, as in cuFFT
  g.inembed[1] = 10;
  g.istride = 2;
  g.idist = 100;
  g.onembed[0] = 4;
  g.onembed[1] = 6;
  g.ostride = 1;
  g.odist = 24;
  // Last input element: batch 2 at 200, index (3, 5) at (3*10 + 5)*2 = 70.
  EXPECT_EQ(extent_bytes(g, true, false), (200u + 70 + 1) * 16);
  EXPECT_EQ(extent_bytes(g, false, false), 72u * 16);
}

TEST(CufftWire, ImpossibleGeometriesHaveNoExtent) {
  Geometry g = basic(1, {8}, kC2C, 1);
  g.rank = 4;
  EXPECT_NE(check(g), nullptr);
  EXPECT_EQ(extent_bytes(g, true, false), kNoExtent);
  g = basic(1, {0}, kC2C, 1);
  EXPECT_NE(check(g), nullptr);
  g = basic(1, {8}, kC2C, 0);
  EXPECT_NE(check(g), nullptr);
  g = basic(1, {8}, kC2C, 1);
  g.itype = kR32F;
  g.otype = kR32F;
  EXPECT_EQ(kind_of(g), Kind::kNone);
  EXPECT_NE(check(g), nullptr);
  g = basic(1, {8}, kC2C, 1);
  g.otype = kC64F;  // mixed precisions
  EXPECT_EQ(kind_of(g), Kind::kNone);
  g = basic(1, {8}, kC2C, 1);
  g.has_inembed = g.has_onembed = true;
  g.inembed[0] = g.onembed[0] = 8;
  g.istride = 0;
  EXPECT_NE(check(g), nullptr);
  // Sizes whose product overflows saturate instead of wrapping.
  g = basic(3, {int64_t(1) << 40, int64_t(1) << 40, 8}, kC2C, 1);
  EXPECT_EQ(extent_bytes(g, true, false), kNoExtent);
  int32_t a, b, c;
  EXPECT_FALSE(types_of(0x2b, &a, &b, &c));
}

TEST(CufftWire, GeometryRoundTripsAndTruncationsAreRefused) {
  Geometry g = basic(2, {6, 9}, kR2C, 5);
  g.has_inembed = g.has_onembed = true;
  g.inembed[1] = 12;
  g.onembed[1] = 5;
  g.istride = 1;
  g.idist = 72;
  g.ostride = 1;
  g.odist = 30;
  ArgWriter w;
  write_geometry(w, g);
  const auto bytes = w.take();
  {
    ArgReader r(bytes);
    Geometry back;
    ASSERT_TRUE(read_geometry(r, &back));
    ASSERT_TRUE(r.finish());
    EXPECT_EQ(back.rank, 2);
    EXPECT_EQ(back.n[1], 9);
    EXPECT_EQ(back.inembed[1], 12);
    EXPECT_EQ(back.odist, 30);
    EXPECT_EQ(back.batch, 5);
    EXPECT_EQ(extent_bytes(back, true, false), extent_bytes(g, true, false));
  }
  for (size_t cut = 0; cut < bytes.size(); cut += 8) {
    ArgReader r(std::span<const std::byte>(bytes.data(), cut));
    Geometry back;
    read_geometry(r, &back);
    EXPECT_FALSE(r.finish()) << cut;
  }
}

}  // namespace
}  // namespace rgpu::protocol::cufft
