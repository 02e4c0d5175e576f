// Decode::kOnUse, as the CPU device loads modules: signatures and variables
// at parse(), each kernel parsed and decoded when first prepared; and the
// PTX constants and declarations that large nvcc modules carry.
#include <atomic>
#include <chrono>
#include <thread>

#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

// Kernel "good" writes WARP_SZ and uses a function-scope .shared array;
// kernel "bad" names a register that does not exist (line 27).
const char* kTwoKernels = R"(.version 8.4
.target sm_90
.address_size 64

.visible .entry good(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  // .shared in a comment is not a declaration
  .shared .align 4 .b8 stage[64];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, WARP_SZ;
  mov.u32 %r2, stage;
  st.shared.u32 [%r2+60], %r1;
  bar.sync 0;
  ld.shared.u32 %r3, [%r2+60];
  st.global.u32 [%rd1], %r3;
  ret;
}

.visible .entry bad(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 5;
  st.global.u32 [%rd1], %r9;
  ret;
}
)";

TEST(PtxLazy, MalformedKernelFailsOnlyWhenUsed) {
  EXPECT_FALSE(Program::parse(kTwoKernels, Decode::kAll).is_ok());
  Module m(kTwoKernels, Decode::kOnUse);
  ASSERT_TRUE(m.ok());
  Program& p = m.program();
  ASSERT_EQ(p.kernels().size(), 2u);
  // The function-scope array is a module variable before any body is parsed.
  ASSERT_GE(p.find_variable("stage"), 0);
  const int bad = p.find_kernel("bad");
  Status s = p.prepare(bad);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("line 27:"), std::string::npos) << s.message();
  EXPECT_EQ(p.prepare(bad).message(), s.message());  // decoded once; the same answer after
  EXPECT_EQ(p.unsupported_reason(bad).rfind("invalid PTX: ", 0), 0u);
  std::vector<uint32_t> out(1, 0);
  DeviceTable mem;
  auto bad_args = m.args("bad");
  bad_args.add(mem.add(out));
  EXPECT_EQ(m.launch("bad", {1}, {32}, bad_args, mem).fault, Fault::kInvalidLaunch);

  auto args = m.args("good");
  args.add(mem.add(out));
  LaunchResult r = m.launch("good", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out[0], 32u);
  EXPECT_EQ(m.kernel("good").static_shared_bytes, 64u);
}

// LaunchEnv::jit = 2: the first launch starts the compile on a thread of
// its own and runs interpreted; later launches run interpreted until the
// code is ready, then compiled, with the same results throughout. A module
// dropped while its compile runs waits for it.
TEST(PtxLazy, BackgroundCompileTakesOverWhileLaunchesGoOn) {
  {
    Module probe(kTwoKernels, Decode::kOnUse);
    ASSERT_TRUE(probe.ok());
    std::vector<uint32_t> out(1, 0);
    DeviceTable mem;
    auto args = probe.args("good");
    args.add(mem.add(out));
    LaunchEnv env;
    env.jit = 1;
    LaunchResult r = probe.launch("good", {1}, {32}, args, mem, 0, env);
    ASSERT_TRUE(r.ok()) << r.message;
    if (!r.compiled) GTEST_SKIP() << "built without the compiled path";
  }
  Module m(kTwoKernels, Decode::kOnUse);
  ASSERT_TRUE(m.ok());
  std::vector<uint32_t> out(1, 0);
  DeviceTable mem;
  auto args = m.args("good");
  args.add(mem.add(out));
  LaunchEnv env;
  env.jit = 2;
  LaunchResult first = m.launch("good", {1}, {32}, args, mem, 0, env);
  ASSERT_TRUE(first.ok()) << first.message;
  EXPECT_FALSE(first.compiled);
  EXPECT_EQ(out[0], 32u);
  bool compiled = false;
  for (int i = 0; i < 3000 && !compiled; ++i) {
    out[0] = 0;
    LaunchResult r = m.launch("good", {1}, {32}, args, mem, 0, env);
    ASSERT_TRUE(r.ok()) << r.message;
    ASSERT_EQ(out[0], 32u) << "launch " << i << (r.compiled ? " compiled" : " interpreted");
    compiled = r.compiled;
    if (!compiled) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(compiled);

  Module dropped(kTwoKernels, Decode::kOnUse);
  ASSERT_TRUE(dropped.ok());
  auto dargs = dropped.args("good");
  dargs.add(mem.add(out));
  ASSERT_TRUE(dropped.launch("good", {1}, {32}, dargs, mem, 0, env).ok());
}  // `dropped` goes while its compile may still run

TEST(PtxLazy, KernelsPreparedFromManyThreadsAgree) {
  // A module of 32 copies of one kernel, prepared concurrently.
  std::string text = ".version 8.4\n.target sm_90\n.address_size 64\n";
  for (int k = 0; k < 32; ++k) {
    text += ".visible .entry k" + std::to_string(k) +
            "(.param .u64 out)\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n"
            "  ld.param.u64 %rd1, [out];\n  mov.u32 %r1, " + std::to_string(k) +
            ";\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";
  }
  auto parsed = Program::parse(text, Decode::kOnUse);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  const Program& p = *parsed.value();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 32; ++k) failures += !p.prepare(k).is_ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int k = 0; k < 32; ++k) EXPECT_GT(p.kernels()[static_cast<size_t>(k)].num_regs, 0u);
}

}  // namespace
}  // namespace rgpu::ptx::testing
