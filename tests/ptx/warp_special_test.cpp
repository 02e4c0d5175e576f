// Corpus kernels for membermask semantics (lanes of one warp passing
// different masks) and for PTX's special registers, for every target
// architecture of the sweep; plus the scheduler's waiting at warp-sync
// points and the messages for names the device does not have.
#include <chrono>

#include "harness.h"
#include "reference.h"

namespace rgpu::ptx::testing {
namespace tk = rgpu::testkernels;

class WarpSpecial : public ::testing::TestWithParam<std::string> {
 protected:
  Module load(const std::string& stem) { return Module(corpus_ptx(stem, GetParam())); }
  int sm() const { return arch_number(GetParam()); }
};

TEST_P(WarpSpecial, GroupsWithTheirOwnMasks) {
  RGPU_CORPUS_LOAD(m, "warp_masks");
  ASSERT_TRUE(m.ok());
  const int threads = 128;
  for (uint64_t seed : {41u, 42u, 43u}) {
    auto in = random_vector<int>(threads, -1000, 1000, seed);
    std::vector<int> out(14 * threads, 0), want(14 * threads);
    DeviceTable mem;
    auto args = m.args("warp_masks");
    args.add(mem.add(in)).add(mem.add(out));
    LaunchResult r = m.launch("warp_masks", {2}, {64}, args, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    tk::warp_masks(in.data(), want.data(), threads);
    for (int i = 0; i < threads; ++i)
      for (int k = 0; k < 14; ++k)
        ASSERT_EQ(out[14 * i + k], want[14 * i + k]) << "thread " << i << " output " << k << " seed " << seed;
  }
}

TEST_P(WarpSpecial, SpecialRegisters) {
  RGPU_CORPUS_LOAD(m, "special_regs");
  ASSERT_TRUE(m.ok());
  const int blocks = 3, block = 64, threads = blocks * block;
  std::vector<unsigned> out(32 * threads, 0xdeadbeef);
  std::vector<unsigned long long> out64(4 * threads, 0xdeadbeef);
  DeviceTable mem;
  auto args = m.args("special_regs");
  args.add(mem.add(out)).add(mem.add(out64));
  const uint32_t dyn = 256;
  LaunchResult r = m.launch("special_regs", {blocks}, {block}, args, mem, dyn);
  ASSERT_TRUE(r.ok()) << r.message;
  const uint32_t static_shared = sm() >= 80 ? 160 : 160 + 1024;  // stat[40] (+ the fallback array below sm_80)
  const uint32_t total = static_shared + dyn;
  const uint32_t reserved = (total + 15) / 16 * 16;
  for (int i = 0; i < threads; ++i) {
    const unsigned* o = &out[32 * i];
    unsigned lane = i % 32, t = i % block;
    SCOPED_TRACE("thread " + std::to_string(i));
    EXPECT_EQ(o[0], 32u);
    EXPECT_EQ(o[1], dyn);
    EXPECT_EQ(o[2], total);
    EXPECT_LT(o[4], o[3]);  // %smid < %nsmid
    EXPECT_EQ(o[5], 1u << lane);
    EXPECT_EQ(o[6], static_cast<unsigned>((2ull << lane) - 1));
    EXPECT_EQ(o[7], (1u << lane) - 1);
    EXPECT_EQ(o[8], ~((1u << lane) - 1));
    EXPECT_EQ(o[9], static_cast<unsigned>(~((2ull << lane) - 1)));
    EXPECT_EQ(o[10], 0u);  // %envreg*
    EXPECT_EQ(o[11], 0u);  // %pm*
    EXPECT_EQ(o[14], t / 32);
    EXPECT_EQ(o[15], static_cast<unsigned>(block / 32));
    if (sm() >= 80) {
      EXPECT_EQ(o[16], reserved);
      EXPECT_EQ(o[17], reserved + 1024);
      EXPECT_EQ(o[18], 1024u);
      EXPECT_EQ(o[19], reserved);
      EXPECT_EQ(o[20], reserved + 512);
    }
    if (sm() >= 90) {
      EXPECT_EQ(o[21], total + 1024);
    }
    EXPECT_EQ(o[22], static_cast<unsigned>(i / block + 1000 * blocks));
    EXPECT_EQ(o[23], 0u);
    EXPECT_EQ(o[24], 11u);
    EXPECT_EQ(o[25], 0u);
    unsigned next = (t + 1) % block;
    EXPECT_EQ(o[26], next * 3 + next * 5 + 7);
    EXPECT_EQ(o[27], 1u);
    EXPECT_EQ(o[28], 1u);
    EXPECT_EQ(out64[4 * i + 0], 0u);
    EXPECT_EQ(out64[4 * i + 1], 0u);
    EXPECT_EQ(out64[4 * i + 2], 1u);
  }
}

// Tiles of 64 threads: two warps share the tile's scratch in the reserved
// shared memory and wait for each other there.
TEST_P(WarpSpecial, CooperativeGroupsTilesOfTwoWarps) {
  RGPU_CORPUS_LOAD(m, "cg_tiles");
  ASSERT_TRUE(m.ok());
  const int blocks = 3, block = 256, threads = blocks * block;
  auto in = random_vector<int>(threads, -1000, 1000, 44);
  std::vector<int> out(3 * threads, 0), want(3 * threads);
  DeviceTable mem;
  auto args = m.args("cg_tiles");
  args.add(mem.add(in)).add(mem.add(out));
  LaunchEnv env;
  env.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  LaunchResult r = m.launch("cg_tiles", {blocks}, {block}, args, mem, 0, env);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::cg_tiles(in.data(), want.data(), threads, block);
  EXPECT_EQ(out, want);
}

INSTANTIATE_TEST_SUITE_P(Archs, WarpSpecial, ::testing::Values("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"));
INSTANTIATE_TEST_SUITE_P(Cuda12, WarpSpecial, ::testing::ValuesIn(cuda12_archs()));

// A kernel whose shared memory ends exactly at its static size still faults
// one byte past it: the reserved region exists only for kernels that read
// where it is.
TEST(WarpSync, ReservedRegionOnlyWhenAsked) {
  const char* text = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  .shared .align 4 .b8 s[16];
  mov.u32 %r1, 16;
  st.shared.u32 [%r1], %r1;
  ret;
}
)";
  Module m(text);
  ASSERT_TRUE(m.ok());
  std::vector<int> out(4);
  DeviceTable mem;
  auto args = m.args("k");
  args.add(mem.add(out));
  LaunchResult r = m.launch("k", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
}

// Lanes of a warp that diverged meet at bar.warp.sync in a loop: the lanes
// that arrive first wait for the rest before reading their writes.
TEST(WarpSync, WaitsForLanesOfItsMaskAtAnotherPoint) {
  const char* text = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[128];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %laneid;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r10, buf;
  add.u32 %r6, %r2, %r10;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra LOW;
  // lanes 16..31: write, then a bar.warp.sync of their own
  mul.lo.u32 %r3, %r1, 10;
  st.shared.u32 [%r6], %r3;
  bar.warp.sync -1;
  sub.u32 %r4, %r6, 64;
  ld.shared.u32 %r5, [%r4];
  bra DONE;
LOW:
  // lanes 0..15 take a longer path, written later in the code
  add.u32 %r3, %r1, 100;
  st.shared.u32 [%r6], %r3;
  bar.warp.sync -1;
  add.u32 %r4, %r6, 64;
  ld.shared.u32 %r5, [%r4];
DONE:
  cvt.u64.u32 %rd2, %r2;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  ret;
}
)";
  Module m(text);
  ASSERT_TRUE(m.ok());
  std::vector<unsigned> out(32, 0);
  DeviceTable mem;
  auto args = m.args("k");
  args.add(mem.add(out));
  LaunchResult r = m.launch("k", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (unsigned l = 0; l < 32; ++l) EXPECT_EQ(out[l], l < 16 ? (l + 16) * 10 : (l - 16) + 100) << l;
}

// Registers start at zero in every lane, on both paths: one that lanes read
// without having written it (a guarded write), and one a shuffle reads from
// lanes that exited before writing it.
TEST(WarpSync, RegistersStartAtZero) {
  const char* text = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %laneid;
  setp.ge.u32 %p2, %r1, 16;
  @%p2 exit;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 mov.u32 %r2, 7;
  mad.lo.u32 %r3, %r1, 3, 1;
  add.u32 %r5, %r1, 16;
  shfl.sync.idx.b32 %r4, %r3, %r5, 31, -1;
  shfl.sync.idx.b32 %r6, %r3, %r1, 31, -1;
  mul.wide.u32 %rd2, %r1, 16;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r2, %r4};
  st.global.u32 [%rd3+8], %r6;
  ret;
}
)";
  Module m(text);
  ASSERT_TRUE(m.ok());
  std::vector<unsigned> out(4 * 32, 0xdeadbeef);
  DeviceTable mem;
  auto args = m.args("k");
  args.add(mem.add(out));
  LaunchResult r = m.launch("k", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (unsigned l = 0; l < 16; ++l) {
    EXPECT_EQ(out[4 * l], l < 8 ? 7u : 0u) << l;
    EXPECT_EQ(out[4 * l + 1], 0u) << l;  // lane l + 16 exited before writing %r3
    EXPECT_EQ(out[4 * l + 2], 3 * l + 1) << l;
  }
  for (unsigned l = 16; l < 32; ++l) EXPECT_EQ(out[4 * l], 0xdeadbeefu) << l;
}

TEST(WarpSync, UnknownSpecialRegisterIsNamed) {
  for (const char* name : {"%envreg32", "%pm8", "%reserved_smem_offset_2", "%tid"}) {
    std::string text = std::string(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
                                   "  .reg .b32 %r<2>;\n  mov.u32 %r1, ") + name + ";\n  ret;\n}\n";
    auto p = Program::parse(text);
    ASSERT_FALSE(p.is_ok()) << name;
    EXPECT_NE(p.status().message().find(name), std::string::npos) << p.status().message();
  }
}

}  // namespace rgpu::ptx::testing
