// What single-pass (decoupled look-back) algorithms need of the interpreter
// across blocks: a vector access is one access (a reader never sees half of
// a status+value pair), and a block spinning on its predecessor's flag always
// finishes, whatever the number of workers.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace {

using namespace rgpu::ptx;
using namespace rgpu::ptx::testing;

// Block 0 publishes {k, k} n times as CUB publishes a tile's {status, value}
// (st.relaxed.gpu.v2, generic address), in an 8-byte and a 16-byte word;
// block 1 reads both words 4n times with ld.relaxed.gpu.v2 and counts the
// reads whose two halves differ (out[0] for 8 bytes, out[1] for 16).
const char kTear[] = R"(
.version 8.4
.target sm_90
.address_size 64
.visible .entry tear(.param .u64 words, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [words];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra $READER;
  mov.u32 %r3, 1;
$WRITE:
  st.relaxed.gpu.v2.u32 [%rd1], {%r3, %r3};
  cvt.u64.u32 %rd3, %r3;
  st.relaxed.gpu.v2.u64 [%rd1+16], {%rd3, %rd3};
  add.u32 %r3, %r3, 1;
  setp.le.u32 %p2, %r3, %r1;
  @%p2 bra $WRITE;
  ret;
$READER:
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
  mov.u32 %r6, 0;
  shl.b32 %r7, %r1, 2;
$READ:
  ld.relaxed.gpu.v2.u32 {%r8, %r9}, [%rd1];
  setp.ne.u32 %p3, %r8, %r9;
  selp.u32 %r10, 1, 0, %p3;
  add.u32 %r5, %r5, %r10;
  ld.relaxed.gpu.v2.u64 {%rd4, %rd5}, [%rd1+16];
  setp.ne.u64 %p3, %rd4, %rd5;
  selp.u32 %r10, 1, 0, %p3;
  add.u32 %r6, %r6, %r10;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p2, %r4, %r7;
  @%p2 bra $READ;
  st.global.u32 [%rd2], %r5;
  st.global.u32 [%rd2+4], %r6;
  ret;
}
)";

TEST(PtxMemoryModel, VectorAccessesAreNeverTorn) {
  Module m(kTear);
  ASSERT_TRUE(m.ok());
  alignas(16) static uint64_t words[4];
  std::vector<uint32_t> out(2, 0);
  DeviceTable mem;
  uint64_t w = mem.add_bytes(words, sizeof(words));
  uint64_t o = mem.add(out);
  // Several rounds: whether the two blocks overlap is up to the host's
  // scheduler, but no overlap may ever show a torn pair.
  for (int round = 0; round < 5; ++round) {
    for (auto& x : words) x = 0;
    LaunchEnv env;
    env.workers = 2;
    LaunchResult r = m.launch("tear", {2, 1, 1}, {1, 1, 1}, m.args("tear").add(w).add(o).add(uint32_t{200000}), mem, 0,
                              env);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(0u, out[0]) << "torn 8-byte vector reads, round " << round;
    EXPECT_EQ(0u, out[1]) << "torn 16-byte vector reads, round " << round;
  }
}

// Block b (thread 0) waits for flags[b-1] (ld.acquire, with nanosleep, as
// CUB's look-back) and then publishes flags[b] = flags[b-1] + 1 with
// st.release; the other warps of the block exit at once.
const char kChain[] = R"(
.version 8.4
.target sm_90
.address_size 64
.visible .entry chain(.param .u64 flags)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [flags];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra $DONE;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r3, 0;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 bra $PUBLISH;
$SPIN:
  ld.acquire.gpu.u32 %r3, [%rd3+-4];
  setp.ne.u32 %p3, %r3, 0;
  @%p3 bra $PUBLISH;
  nanosleep.u32 100;
  bra.uni $SPIN;
$PUBLISH:
  add.u32 %r4, %r3, 1;
  st.release.gpu.u32 [%rd3], %r4;
$DONE:
  ret;
}
)";

TEST(PtxMemoryModel, BlocksSpinningOnTheirPredecessorAlwaysFinish) {
  Module m(kChain);
  ASSERT_TRUE(m.ok());
  for (unsigned workers : {1u, 2u, 5u}) {
    std::vector<uint32_t> flags(300, 0);
    DeviceTable mem;
    uint64_t f = mem.add(flags);
    LaunchEnv env;
    env.workers = workers;
    // A deadlock would be a kTimeout here instead of a hung test.
    env.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    LaunchResult r = m.launch("chain", {300, 1, 1}, {128, 1, 1}, m.args("chain").add(f), mem, 0, env);
    ASSERT_TRUE(r.ok()) << "workers=" << workers << ": " << r.message;
    for (uint32_t i = 0; i < flags.size(); ++i) ASSERT_EQ(i + 1, flags[i]) << "block " << i << " workers=" << workers;
  }
}

}  // namespace
