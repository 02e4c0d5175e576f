// Parser and decoder: directives, declarations, initializers, operand forms,
// module variables, parameter layout, and malformed input reported with its
// line number.
#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

const char* kFeatures = R"(//
// hand-written: directives and operand forms nvcc emits
.version 8.0
.target sm_75
.address_size 64

.global .align 4 .f32 table[4] = {0f3F800000, 0f40000000, 0f40400000, 0f40800000};
.const .align 8 .f64 scale = 0d4000000000000000;
.visible .global .align 4 .u32 counter;
.extern .shared .align 16 .b8 dyn[];

.func (.param .b32 ret0) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  shl.b32 %r2, %r1, 1;
  st.param.b32 [ret0+0], %r2;
  ret;
}

.visible .entry features(
  .param .u64 features_param_0,
  .param .u32 features_param_1,
  .param .align 8 .b8 features_param_2[12]
)
.maxntid 64, 1, 1
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .f32 %f<5>;
  .reg .f64 %fd<3>;
  .reg .b64 %rd<9>;

  ld.param.u64 %rd1, [features_param_0];
  ld.param.u32 %r1, [features_param_1];
  ld.param.u32 %r9, [features_param_2+8];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  and.b32 %r3, %r2, 3;
  mul.wide.u32 %rd3, %r3, 4;
  mov.u64 %rd4, table;
  add.s64 %rd5, %rd4, %rd3;
  ld.global.f32 %f1, [%rd5];
  ld.const.f64 %fd1, [scale];
  cvt.rn.f32.f64 %f2, %fd1;
  mul.f32 %f3, %f1, %f2;
  setp.lt.u32 %p1, %r2, %r1;
  @!%p1 bra $L__skip;
  {
  .reg .b32 temp;
  .param .b32 param0;
  st.param.b32 [param0+0], %r2;
  .param .b32 retval0;
  call.uni (retval0),
  twice,
  (
  param0
  );
  ld.param.b32 %r6, [retval0+0];
  }
  add.s32 %r6, %r6, %r9;
  mul.wide.u32 %rd6, %r2, 8;
  add.s64 %rd7, %rd2, %rd6;
  mov.b32 %r4, %f3;
  mov.b64 %rd8, {%r4, %r6};
  st.global.u64 [%rd7], %rd8;
  atom.global.add.u32 %r5, [counter], 1;
  mov.u32 %r7, dyn;
  st.shared.u32 [%r7+4], %r2;
$L__skip:
  ret;
}
)";

TEST(PtxParser, ModuleLayoutAndVariables) {
  Module m(kFeatures);
  ASSERT_TRUE(m.ok());
  Program& p = m.program();
  EXPECT_EQ(p.version(), "8.0");
  EXPECT_EQ(p.target(), "sm_75");
  ASSERT_EQ(p.kernels().size(), 1u);
  const KernelInfo& k = p.kernels()[0];
  EXPECT_EQ(k.name, "features");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].offset, 0u);
  EXPECT_EQ(k.params[1].offset, 8u);
  EXPECT_EQ(k.params[2].offset, 16u);
  EXPECT_EQ(k.params[2].size, 12u);
  EXPECT_EQ(k.param_bytes, 28u);
  EXPECT_EQ(k.max_threads, 64u);
  int t = p.find_variable("table");
  ASSERT_GE(t, 0);
  const VariableInfo& v = p.variables()[static_cast<size_t>(t)];
  EXPECT_EQ(v.space, Space::kGlobal);
  EXPECT_EQ(v.size, 16u);
  ASSERT_EQ(v.init.size(), 16u);
  EXPECT_EQ(v.init[3], 0x3f);  // 1.0f little endian
  int c = p.find_variable("counter");
  ASSERT_GE(c, 0);
  EXPECT_TRUE(p.variables()[static_cast<size_t>(c)].visible);
  EXPECT_EQ(p.variables()[static_cast<size_t>(c)].size, 4u);
  int s = p.find_variable("scale");
  ASSERT_GE(s, 0);
  EXPECT_EQ(p.variables()[static_cast<size_t>(s)].space, Space::kConst);
  int d = p.find_variable("dyn");
  ASSERT_GE(d, 0);
  EXPECT_TRUE(p.variables()[static_cast<size_t>(d)].is_extern);
}

TEST(PtxParser, OperandFormsExecute) {
  Module m(kFeatures);
  ASSERT_TRUE(m.ok());
  const uint32_t n = 40;
  std::vector<uint64_t> out(64, 0);
  DeviceTable mem;
  struct Tail {
    uint64_t pad;
    uint32_t add;
  } tail{0, 1000};
  auto args = m.args("features");
  args.add(mem.add(out)).add(n);
  // The 12-byte array parameter: only its last word is read.
  std::vector<uint8_t> raw(12, 0);
  memcpy(raw.data() + 8, &tail.add, 4);
  struct Bytes12 {
    uint8_t b[12];
  } b12;
  memcpy(b12.b, raw.data(), 12);
  args.add(b12);
  LaunchResult r = m.launch("features", {1}, {64}, args, mem, 16);
  ASSERT_TRUE(r.ok()) << r.message;
  const float table[4] = {1.f, 2.f, 3.f, 4.f};
  for (uint32_t i = 0; i < 64; ++i) {
    if (i >= n) {
      EXPECT_EQ(out[i], 0u);
      continue;
    }
    float f = table[i & 3] * 2.f;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    EXPECT_EQ(static_cast<uint32_t>(out[i]), bits) << i;
    EXPECT_EQ(out[i] >> 32, 2 * i + 1000) << i;
  }
  uint32_t counter;
  memcpy(&counter, reinterpret_cast<void*>(m.variable_address("counter")), 4);
  EXPECT_EQ(counter, n);
  // The block is bigger than .maxntid allows.
  auto again = m.args("features");
  again.add(mem.add(out)).add(n).add(b12);
  EXPECT_EQ(m.launch("features", {1}, {128}, again, mem, 16).fault, Fault::kInvalidLaunch);
}

TEST(PtxParser, CacheHintsAndQualifiedSpaces) {
  const char* text = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry hints(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<3>;
  .shared .align 16 .b8 stage[16];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.global.nc.L2::128B.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  mov.u32 %r1, stage;
  st.shared::cta.v4.f32 [%r1], {%f4, %f3, %f2, %f1};
  ld.shared::cta.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];
  st.global.L1::no_allocate.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};
  ret;
}
)";
  Module m(text);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.program().unsupported_reason(0), "");
  std::vector<float> src = {1.f, 2.f, 3.f, 4.f}, dst(4, 0.f);
  DeviceTable mem;
  auto args = m.args("hints");
  args.add(mem.add(src)).add(mem.add(dst));
  LaunchResult r = m.launch("hints", {1}, {1}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(dst, (std::vector<float>{4.f, 3.f, 2.f, 1.f}));
}

TEST(PtxParser, HalfApproxFunctions) {
  const char* text = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry halves(.param .u64 io)
{
  .reg .b16 %h<4>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [io];
  ld.global.b16 %h1, [%rd1];
  ex2.approx.f16 %h2, %h1;
  st.global.b16 [%rd1+2], %h2;
  ld.global.b32 %r1, [%rd1+4];
  tanh.approx.f16x2 %r2, %r1;
  st.global.b32 [%rd1+8], %r2;
  ret;
}
)";
  Module m(text);
  ASSERT_TRUE(m.ok());
  // 2.0, then {0.0, 1.0} as f16x2 (low half first).
  std::vector<uint16_t> io = {0x4000, 0, 0x0000, 0x3c00, 0, 0};
  DeviceTable mem;
  auto args = m.args("halves");
  args.add(mem.add(io));
  LaunchResult r = m.launch("halves", {1}, {1}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(io[1], 0x4400);  // 4.0
  EXPECT_EQ(io[4], 0x0000);  // tanh(0)
  EXPECT_EQ(io[5], 0x3a18);  // tanh(1) = 0.7617 in binary16
}

struct Malformed {
  const char* text;
  int line;
};

TEST(PtxParser, MalformedInputGivesLineNumbers) {
  const Malformed cases[] = {
      {"garbage here", 1},
      {".version 8.0\n.target sm_75\n.visible .entry k()\n{\n  add.s32 %r1, %r2, %r3;\n}\n", 5},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  bra $L__nowhere;\n}\n", 5},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  mov.b32 %r1, 0fZZZ;\n}\n", 5},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  mov.b32 %r1, 1\n", 6},
      {".version 8.0\n.visible .entry k(\n  .param .u64 p\n{\n", 4},
      {".version 8.0\n.global .align 3 .b8 x[4];\n", 2},
      {".version 8.0\n.global .b8 s[2] = {1, 2, 3};\n", 2},
      {".version 8.0\n/* never closed\n", 2},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  ld.global.u32 %r1, [%r9];\n}\n", 5},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  call.uni missing, ();\n}\n", 5},
      {".version 8.0\n.visible .entry k()\n{\n  .reg .b32 %r<4>;\n  mov.b32 %r1, \"text\";\n}\n", 5},
  };
  for (const auto& c : cases) {
    auto r = Program::parse(c.text);
    ASSERT_FALSE(r.is_ok()) << c.text;
    EXPECT_EQ(r.status().kind(), ErrorKind::kInvalidArgument);
    std::string want = "line " + std::to_string(c.line) + ":";
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message() << " for:\n" << c.text;
  }
}

TEST(PtxParser, TruncatedCorpusNeverCrashes) {
  std::string text = corpus_ptx("matmul", "sm_75");
  ASSERT_FALSE(text.empty());
  int ok = 0;
  for (size_t cut = 0; cut < text.size(); cut += 97) {
    auto r = Program::parse(std::string_view(text).substr(0, cut));
    ok += r.is_ok();
  }
  EXPECT_LT(ok, static_cast<int>(text.size() / 97));  // most prefixes are malformed
  EXPECT_TRUE(Program::parse(text).is_ok());
}

}  // namespace
}  // namespace rgpu::ptx::testing
