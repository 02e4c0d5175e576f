// The compiled path's analysis (cpu-device/ptx/src/jit/analysis.h) on
// hand-written PTX: which instructions are native, where blocks start,
// which slots are constants, and which branches can split a warp. The
// analysis has no LLVM in it; only a build with the compiled path links it.
#ifdef RGPU_PTX_JIT

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decode.h"
#include "jit/analysis.h"

namespace rgpu::ptx::jit {
namespace {

// out[0] = tid < 16 ? sin(tid) bits : tid + 1, unless n == 0.
constexpr const char* kPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r2, [n];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra DONE;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra SMALL;
  add.s32 %r3, %r1, 1;
  bra.uni JOIN;
SMALL:
  cvt.rn.f32.u32 %f1, %r1;
  sin.approx.f32 %f2, %f1;
  mov.b32 %r3, %f2;
JOIN:
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r3;
DONE:
  ret;
}
)";

struct Analyzed {
  std::unique_ptr<ProgramImpl> program;
  std::unique_ptr<KernelUnit> unit;
  std::vector<std::string> opcodes;
  Analysis an;
  Divergence div;

  const Function& fn() const { return unit->functions[0]; }
  // The pc of the n-th (0-based) instruction whose opcode text is `op`.
  size_t pc_of(const std::string& op, int nth = 0) const {
    for (size_t pc = 0; pc < opcodes.size(); ++pc)
      if (opcodes[pc] == op && nth-- == 0) return pc;
    ADD_FAILURE() << "no " << op;
    return 0;
  }
};

Analyzed analyze_text(const char* text) {
  Analyzed a;
  auto p = load_module(text);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  if (!p.is_ok()) return a;
  a.program = std::move(p.value());
  auto unit = decode_kernel(*a.program, 0, &a.program->kernels[0]);
  EXPECT_TRUE(unit.is_ok()) << unit.status().message();
  if (!unit.is_ok()) return a;
  a.unit = std::move(unit.value());
  std::string err = kernel_opcodes(*a.program, 0, *a.unit, &a.opcodes);
  EXPECT_EQ(err, "");
  a.an = analyze(a.fn(), a.opcodes);
  a.div = divergence(a.fn(), a.an);
  return a;
}

TEST(JitAnalysis, NativeFormsAndHandlers) {
  Analyzed a = analyze_text(kPtx);
  ASSERT_TRUE(a.unit);
  ASSERT_EQ(a.an.natives.size(), a.fn().code.size());
  EXPECT_EQ(a.an.natives[a.pc_of("add.s32")].op, Op::kAdd);
  EXPECT_EQ(a.an.natives[a.pc_of("add.s32")].t, Ty::kS32);
  EXPECT_EQ(a.an.natives[a.pc_of("setp.lt.u32")].op, Op::kSetp);
  EXPECT_EQ(a.an.natives[a.pc_of("cvt.rn.f32.u32")].op, Op::kCvt);
  EXPECT_EQ(a.an.natives[a.pc_of("cvt.rn.f32.u32")].t2, Ty::kU32);
  EXPECT_EQ(a.an.natives[a.pc_of("st.global.u32")].op, Op::kSt);
  EXPECT_EQ(a.an.natives[a.pc_of("cvta.to.global.u64")].op, Op::kCvta);
  // No native form: the interpreter's handler runs it.
  EXPECT_EQ(a.an.natives[a.pc_of("sin.approx.f32")].op, Op::kNone);
}

TEST(JitAnalysis, BlocksStartAtTargetsAndAfterBranches) {
  Analyzed a = analyze_text(kPtx);
  ASSERT_TRUE(a.unit);
  const auto& code = a.fn().code;
  EXPECT_TRUE(a.an.leader[0]);
  size_t bra_small = a.pc_of("bra", 1);
  ASSERT_EQ(code[bra_small].kind, Kind::kBra);
  EXPECT_TRUE(a.an.leader[code[bra_small].target]) << "a branch target starts a block";
  EXPECT_TRUE(a.an.leader[bra_small + 1]) << "the instruction after a branch starts a block";
  EXPECT_EQ(a.opcodes[code[bra_small].target], "cvt.rn.f32.u32");
  // Inside a straight run, no block starts.
  EXPECT_FALSE(a.an.leader[a.pc_of("sin.approx.f32")]);
  EXPECT_FALSE(a.an.leader[a.pc_of("st.global.u32")]);
}

TEST(JitAnalysis, BranchesOnTheThreadIndexDivergeOthersDoNot) {
  Analyzed a = analyze_text(kPtx);
  ASSERT_TRUE(a.unit);
  size_t bra_done = a.pc_of("bra", 0), bra_small = a.pc_of("bra", 1);
  const auto& code = a.fn().code;
  // @%p2 bra DONE: %p2 comes from a kernel parameter, the same in every lane.
  EXPECT_FALSE(a.div.branch[bra_done]);
  EXPECT_FALSE(a.div.varying[code[bra_done].guard]);
  // @%p1 bra SMALL: %p1 comes from %tid.x.
  EXPECT_TRUE(a.div.branch[bra_small]);
  EXPECT_TRUE(a.div.varying[code[bra_small].guard]);
  // %r3 is written on both sides of the divergent branch: it varies.
  EXPECT_TRUE(a.div.varying[code[a.pc_of("add.s32")].d]);
}

TEST(JitAnalysis, ImmediatesAreConstantsAndHandlerOperandsAreMarked) {
  Analyzed a = analyze_text(kPtx);
  ASSERT_TRUE(a.unit);
  const auto& code = a.fn().code;
  // add.s32 %r3, %r1, 1: the 1 is an immediate slot never written.
  uint32_t one = code[a.pc_of("add.s32")].b;
  ASSERT_LT(one, a.an.constant.size());
  EXPECT_TRUE(a.an.constant[one]);
  EXPECT_TRUE(a.an.fixed(one));
  EXPECT_EQ(a.an.fixed_val(one), 1u);
  // %r1 is written by mov from %tid.x: not a constant.
  EXPECT_FALSE(a.an.fixed(code[a.pc_of("add.s32")].a));
  // sin.approx's source is read by the interpreter's handler.
  EXPECT_TRUE(a.an.handler_reads[code[a.pc_of("sin.approx.f32")].a]);
}

}  // namespace
}  // namespace rgpu::ptx::jit

#endif  // RGPU_PTX_JIT
