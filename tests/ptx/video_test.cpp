// Scalar video instructions (vshl vshr vadd vsub vabsdiff vmin vmax vmad)
// against results worked out by hand from the PTX ISA's semantics: operand
// selection and extension, clamp vs wrap shift amounts, saturation to the
// destination (or selected sub-word), the secondary operation with c, and
// the merge into c.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"

namespace {

using namespace rgpu::ptx;
using namespace rgpu::ptx::testing;

struct Case {
  uint32_t a, b, c, want;
};

// A kernel whose thread i loads a, b, c from io[4i..4i+2], runs `inst` (on
// registers %r1 %r2 %r3, result in %r4) and stores %r4 to io[4i+3].
std::string kernel(const std::string& inst) {
  return R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 io)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [io];
  mov.u32 %r5, %tid.x;
  mul.wide.u32 %rd2, %r5, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r1, [%rd3];
  ld.global.u32 %r2, [%rd3+4];
  ld.global.u32 %r3, [%rd3+8];
  )" + inst + R"(;
  st.global.u32 [%rd3+12], %r4;
  ret;
}
)";
}

void check(const std::string& inst, const std::vector<Case>& cases) {
  SCOPED_TRACE(inst);
  Module m(kernel(inst));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m.program().unsupported_reason(0), "");
  std::vector<uint32_t> io;
  for (const Case& c : cases) io.insert(io.end(), {c.a, c.b, c.c, 0xdeadbeefu});
  DeviceTable mem;
  auto args = m.args("k");
  args.add(mem.add(io));
  LaunchResult r = m.launch("k", {1}, {static_cast<uint32_t>(cases.size())}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(io[4 * i + 3], cases[i].want) << std::hex << "case " << i << ": a=0x" << cases[i].a << " b=0x"
                                            << cases[i].b << " c=0x" << cases[i].c;
}

std::string refused(const std::string& inst) {
  Module m(kernel(inst));
  if (!m.ok()) return "parse failed";
  return m.program().unsupported_reason(0);
}

TEST(PtxVideo, ShiftRightClampAdd) {
  // What cub's radix sort emits (SHR_ADD): amounts above 32 act as 32.
  check("vshr.u32.u32.u32.clamp.add %r4, %r1, %r2, %r3",
        {{0xf0, 4, 1, 0x10}, {0x80000000u, 31, 0, 1}, {0xffffffffu, 32, 5, 5}, {0xffffffffu, 33, 5, 5},
         {0xffffffffu, 0xffffffffu, 7, 7}, {0x12345678u, 0, 1, 0x12345679u}});
  check("vshr.u32.u32.u32.clamp.add %r4, %r1, 8, %r3", {{0x1234u, 0, 2, 0x14}});
}

TEST(PtxVideo, ShiftRightWrap) {
  // .wrap keeps the amount's low five bits; the add wraps at 32 bits.
  check("vshr.u32.u32.u32.wrap.add %r4, %r1, %r2, %r3",
        {{0xf0, 36, 1, 0x10}, {0xffffffffu, 32, 1, 0}, {0x80000000u, 63, 0, 1}});
  check("vshr.s32.s32.u32.wrap %r4, %r1, %r2", {{0x80000000u, 33, 0, 0xc0000000u}, {0xfffffff0u, 34, 0, 0xfffffffcu}});
}

TEST(PtxVideo, ShiftRightSignedClamp) {
  // A signed a shifts in its sign; clamped to 32 it becomes all sign bits.
  check("vshr.s32.s32.u32.clamp %r4, %r1, %r2",
        {{0x80000000u, 4, 0, 0xf8000000u}, {0x80000000u, 40, 0, 0xffffffffu}, {0x7fffffffu, 40, 0, 0},
         {0xfffffff0u, 2, 0, 0xfffffffcu}, {0x7fffffffu, 32, 0, 0}});
  // The same bits as unsigned shift in zeros.
  check("vshr.u32.u32.u32.clamp %r4, %r1, %r2", {{0x80000000u, 4, 0, 0x08000000u}, {0x80000000u, 40, 0, 0}});
}

TEST(PtxVideo, ShiftLeftClampWrapSat) {
  check("vshl.u32.u32.u32.clamp %r4, %r1, %r2", {{1, 31, 0, 0x80000000u}, {1, 32, 0, 0}, {3, 100, 0, 0}});
  check("vshl.u32.u32.u32.wrap %r4, %r1, %r2", {{1, 33, 0, 2}, {3, 32, 0, 3}, {1, 31, 0, 0x80000000u}});
  // .sat clamps the wide result to the destination's range.
  check("vshl.u32.u32.u32.sat.clamp %r4, %r1, %r2",
        {{1, 31, 0, 0x80000000u}, {1, 32, 0, 0xffffffffu}, {3, 31, 0, 0xffffffffu}, {0, 40, 0, 0}});
  check("vshl.s32.s32.u32.sat.clamp %r4, %r1, %r2",
        {{1, 30, 0, 0x40000000u}, {1, 31, 0, 0x7fffffffu}, {0xffffffffu, 31, 0, 0x80000000u},
         {0xfffffffeu, 31, 0, 0x80000000u}});
  check("vshl.u32.u32.u32.clamp.add %r4, %r1, %r2, %r3", {{1, 4, 3, 19}, {5, 32, 9, 9}});
}

TEST(PtxVideo, ShiftSecondaryMinMax) {
  check("vshl.u32.u32.u32.clamp.min %r4, %r1, %r2, %r3", {{1, 4, 10, 10}, {1, 2, 10, 4}});
  check("vshl.u32.u32.u32.clamp.max %r4, %r1, %r2, %r3", {{1, 4, 10, 16}, {1, 4, 0x80000000u, 0x80000000u}});
  // c takes the destination's signedness: -16 vs -32 signed, vs 5 and
  // 0xffffffe0 unsigned.
  check("vshr.s32.s32.u32.clamp.max %r4, %r1, %r2, %r3",
        {{0xffffffc0u, 2, 0xffffffe0u, 0xfffffff0u}, {0xffffffc0u, 2, 5, 5}});
  check("vshr.u32.s32.u32.clamp.max %r4, %r1, %r2, %r3",
        {{0xffffffc0u, 2, 5, 5}, {0xffffffc0u, 2, 0xffffffe0u, 0xffffffe0u}});
  check("vshr.s32.s32.u32.wrap.min %r4, %r1, %r2, %r3", {{0xffffffc0u, 34, 3, 0xfffffff0u}});
}

TEST(PtxVideo, Selectors) {
  check("vshr.u32.u32.u32.clamp %r4, %r1.b1, %r2", {{0x12345678u, 4, 0, 5}});
  check("vshr.s32.s32.u32.clamp %r4, %r1.h1, %r2", {{0x80001234u, 4, 0, 0xfffff800u}});
  check("vshl.u32.u32.u32.wrap %r4, %r1, %r2.b1", {{1, 0x0300, 0, 8}});
  // b0 of 0xff as s32 is -1; h0 of 0x17fff is 32767.
  check("vadd.s32.s32.s32.sat %r4, %r1.b0, %r2.h0", {{0xffu, 0x17fffu, 0, 0x7ffe}});
  check("vadd.u32.u32.u32 %r4, %r1.b3, %r2.b2", {{0xff000000u, 0x00ff0000u, 0, 0x1fe}});
  check("vmad.u32.u32.u32 %r4, %r1.h1, %r2.b2, %r3", {{0x00030000u, 0x00050000u, 1, 16}});
}

TEST(PtxVideo, MergeIntoC) {
  // d.dsel: the (saturated) result's low byte/half replaces that part of c.
  check("vadd.u32.u32.u32.sat %r4.b1, %r1, %r2, %r3", {{200, 100, 0x11223344u, 0x1122ff44u}});
  check("vadd.u32.u32.u32 %r4.b1, %r1, %r2, %r3", {{200, 100, 0x11223344u, 0x11222c44u}});
  check("vadd.u32.u32.u32 %r4.h1, %r1, %r2, %r3", {{0x12345u, 1, 0xaaaabbbbu, 0x2346bbbbu}});
  check("vadd.s32.s32.s32.sat %r4.h0, %r1, %r2, %r3", {{0xffff63c0u, 0, 0x12340000u, 0x12348000u}});
  check("vsub.s32.s32.s32.sat %r4.b3, %r1, %r2, %r3", {{0, 1, 0x00aabbccu, 0xffaabbccu}, {200, 0, 0, 0x7f000000u}});
  check("vshl.u32.u32.u32.sat.clamp %r4.b0, %r1, %r2, %r3", {{1, 9, 0xabcdef00u, 0xabcdefffu}});
}

TEST(PtxVideo, AddSubSaturate) {
  check("vadd.u32.u32.u32 %r4, %r1, %r2", {{0xffffffffu, 1, 0, 0}, {5, 6, 0, 11}});
  check("vadd.u32.u32.u32.sat %r4, %r1, %r2", {{0xffffffffu, 1, 0, 0xffffffffu}, {5, 6, 0, 11}});
  check("vadd.s32.s32.s32.sat %r4, %r1, %r2",
        {{0x7fffffffu, 1, 0, 0x7fffffffu}, {0x80000000u, 0xffffffffu, 0, 0x80000000u}, {0xfffffffdu, 1, 0, 0xfffffffeu}});
  // Mixed types: a u32 0xffffffff is 4294967295, not -1.
  check("vadd.s32.u32.s32.sat %r4, %r1, %r2", {{0xffffffffu, 0xffffffffu, 0, 0x7fffffffu}});
  check("vadd.u32.s32.s32.sat %r4, %r1, %r2", {{0xfffffffbu, 3, 0, 0}});
  check("vadd.u32.u32.u32.add %r4, %r1, %r2, %r3", {{1, 2, 3, 6}, {0xffffffffu, 1, 1, 1}});
  check("vsub.u32.u32.u32 %r4, %r1, %r2", {{3, 5, 0, 0xfffffffeu}});
  check("vsub.u32.u32.u32.sat %r4, %r1, %r2", {{3, 5, 0, 0}, {5, 3, 0, 2}});
  check("vsub.s32.s32.s32.sat %r4, %r1, %r2", {{0x80000000u, 1, 0, 0x80000000u}, {0x7fffffffu, 0xffffffffu, 0, 0x7fffffffu}});
  // Saturation comes before the secondary operation.
  check("vadd.u32.u32.u32.sat.add %r4, %r1, %r2, %r3", {{0xffffffffu, 1, 1, 0}});
}

TEST(PtxVideo, AbsdiffMinMax) {
  check("vabsdiff.u32.u32.u32 %r4, %r1, %r2", {{3, 5, 0, 2}, {0, 0xffffffffu, 0, 0xffffffffu}});
  check("vabsdiff.s32.s32.s32 %r4, %r1, %r2", {{0xfffffffdu, 5, 0, 8}, {0x80000000u, 0x7fffffffu, 0, 0xffffffffu}});
  check("vabsdiff.s32.s32.s32.sat %r4, %r1, %r2", {{0x80000000u, 0x7fffffffu, 0, 0x7fffffffu}});
  check("vabsdiff.u32.u32.u32.add %r4, %r1, %r2, %r3", {{3, 5, 10, 12}, {9, 1, 1, 9}});
  check("vmin.u32.u32.u32 %r4, %r1, %r2", {{0xffffffffu, 1, 0, 1}});
  check("vmin.s32.s32.s32 %r4, %r1, %r2", {{0xffffffffu, 1, 0, 0xffffffffu}});
  check("vmin.s32.u32.s32 %r4, %r1, %r2", {{0xffffffffu, 0xffffffffu, 0, 0xffffffffu}});
  check("vmax.s32.u32.s32 %r4, %r1, %r2", {{0xffffffffu, 0xffffffffu, 0, 0xffffffffu}});
  check("vmax.s32.u32.s32.sat %r4, %r1, %r2", {{0xffffffffu, 0xffffffffu, 0, 0x7fffffffu}});
  check("vmax.u32.u32.u32.max %r4, %r1, %r2, %r3", {{1, 2, 3, 3}, {1, 2, 0, 2}});
  check("vmin.u32.u32.u32.min %r4, %r1, %r2, %r3", {{5, 7, 6, 5}, {5, 7, 4, 4}});
  check("vmax.s32.s32.s32.min %r4, %r1, %r2, %r3", {{0xfffffff0u, 0xfffffff8u, 0xfffffffau, 0xfffffff8u}});
}

TEST(PtxVideo, Mad) {
  check("vmad.u32.u32.u32 %r4, %r1, %r2, %r3", {{3, 4, 5, 17}, {0xffffffffu, 0xffffffffu, 0, 1}});
  check("vmad.u32.u32.u32.sat %r4, %r1, %r2, %r3", {{0xffffffffu, 0xffffffffu, 0, 0xffffffffu}, {3, 4, 5, 17}});
  check("vmad.u32.u32.u32.po %r4, %r1, %r2, %r3", {{3, 4, 5, 18}});
  check("vmad.s32.s32.s32 %r4, %r1, %r2, %r3", {{0xfffffffdu, 4, 5, 0xfffffff9u}});
  // Scaling is an arithmetic shift of the wide sum: -1000000 >> 7 = -7813.
  check("vmad.s32.s32.s32.shr7 %r4, %r1, %r2, %r3", {{1000, 1000, 0, 7812}, {0xfffffc18u, 1000, 0, 0xffffe17bu}});
  check("vmad.u32.u32.u32.po.shr15 %r4, %r1, %r2, %r3", {{0x8000, 0x8000, 0, 0x8000}});
  check("vmad.s32.s32.s32.sat %r4, %r1, %r2, %r3", {{0x10000, 0x10000, 0, 0x7fffffffu}});
  // A signed a makes the result signed and c sign-extended.
  check("vmad.u32.s32.u32 %r4, %r1, %r2, %r3", {{0xfffffffeu, 3, 0xffffffffu, 0xfffffff9u}});
}

TEST(PtxVideo, RefusedFormsNameTheReason) {
  EXPECT_NE(refused("vshr.u32.u32.u32 %r4, %r1, %r2").find("needs exactly one of .clamp/.wrap"), std::string::npos);
  EXPECT_NE(refused("vshr.u32.u32.s32.clamp %r4, %r1, %r2").find("shift amount type must be .u32"),
            std::string::npos);
  EXPECT_NE(refused("vadd.u32.u32.u32.add %r4.b0, %r1, %r2, %r3").find("secondary operation with a destination"),
            std::string::npos);
  EXPECT_NE(refused("vadd.u32.u32.u32.add %r4, %r1, %r2").find("expects 4 operands"), std::string::npos);
  EXPECT_NE(refused("vadd.u32.u32.f32 %r4, %r1, %r2").find("types other than"), std::string::npos);
  std::string r = refused("vadd.u32.u32.u32.sat.add %r4, %r1, %r2, %r3");
  EXPECT_EQ(r, "");
  // SIMD video stays refused.
  EXPECT_NE(refused("vadd4.u32.u32.u32.add %r4, %r1, %r2, %r3").find("not implemented"), std::string::npos);
  EXPECT_NE(refused("vshr.u32.u32.u32 %r4, %r1, %r2").find("at line"), std::string::npos);
}

}  // namespace
