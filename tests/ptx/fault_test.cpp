// Faults and launch errors: illegal and misaligned addresses, unsupported
// instructions, traps and device asserts, the watchdog, bad launch shapes,
// concurrent launches of one Program, and launches on a caller's worker pool.
#include <atomic>
#include <thread>

#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

const char* kMisaligned = R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry misaligned(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  add.s64 %rd2, %rd1, 2;
  ld.global.u32 %r1, [%rd2];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

const char* kUnsupported = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry fine(.param .u64 p)
{
  ret;
}
.visible .entry reduces_multimem(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  mov.f32 %f1, 0f00000000;
  multimem.ld_reduce.relaxed.sys.global.add.f32 %f1, [%rd1];
  ret;
}
.visible .entry textures(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  .reg .f32 %f<5>;
  ld.param.u64 %rd1, [p];
  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1}];
  ret;
}
)";

TEST(PtxFaults, IllegalAddressOutsideAllocations) {
  Module m(corpus_ptx("elementwise", "sm_75"));
  ASSERT_TRUE(m.ok());
  const int n = 256;
  std::vector<float> a(n, 1.f), b(n, 2.f), c(n / 2, 0.f);  // c too small
  DeviceTable mem;
  auto args = m.args("vec_add");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
  LaunchResult r = m.launch("vec_add", {2}, {128}, args, mem);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_EQ(cuda_error_code(r.fault), 700);
  EXPECT_NE(r.message.find("line"), std::string::npos) << r.message;
  EXPECT_GE(r.address, reinterpret_cast<uint64_t>(c.data()) + c.size() * sizeof(float));
  EXPECT_FALSE(r.status().is_ok());

  auto null_args = m.args("vec_add");
  null_args.add(mem.add(a)).add(mem.add(b)).add(uint64_t{0}).add(n);
  r = m.launch("vec_add", {2}, {128}, null_args, mem);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
}

// One worker runs every block, so earlier warps' accesses to c are known to
// lie inside it (a compiled kernel keeps that extent per instruction): a
// later warp that runs past c's end still faults, at an address past it.
TEST(PtxFaults, IllegalAddressPastTheEndAfterAccessesInside) {
  Module m(corpus_ptx("elementwise", "sm_75"));
  ASSERT_TRUE(m.ok());
  const int n = 256;
  std::vector<float> a(n, 1.f), b(n, 2.f), c(200, 0.f);  // the last block's second warp crosses c's end
  DeviceTable mem;
  auto args = m.args("vec_add");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
  LaunchEnv env;
  env.workers = 1;
  LaunchResult r = m.launch("vec_add", {4}, {64}, args, mem, 0, env);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
  EXPECT_GE(r.address, reinterpret_cast<uint64_t>(c.data()) + c.size() * sizeof(float));
  EXPECT_EQ(c[0], 3.f);  // warps before the fault ran
}

TEST(PtxFaults, MisalignedAddress) {
  Module m(kMisaligned);
  ASSERT_TRUE(m.ok());
  std::vector<uint32_t> buf(16, 0);
  DeviceTable mem;
  auto args = m.args("misaligned");
  args.add(mem.add(buf));
  LaunchResult r = m.launch("misaligned", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress) << r.message;
  EXPECT_EQ(cuda_error_code(r.fault), 716);
}

TEST(PtxFaults, UnsupportedInstructionNamedAtLoadAndLaunch) {
  Module m(kUnsupported);
  ASSERT_TRUE(m.ok());
  Program& p = m.program();
  EXPECT_EQ(p.unsupported_reason(p.find_kernel("fine")), "");
  std::string why = p.unsupported_reason(p.find_kernel("reduces_multimem"));
  EXPECT_NE(why.find("multimem.ld_reduce.relaxed.sys.global.add.f32"), std::string::npos) << why;
  EXPECT_NE(why.find("line 15"), std::string::npos) << why;
  EXPECT_NE(p.unsupported_reason(p.find_kernel("textures")).find("tex.1d"), std::string::npos);

  std::vector<uint32_t> buf(16, 0);
  DeviceTable mem;
  auto ok_args = m.args("fine");
  ok_args.add(mem.add(buf));
  EXPECT_TRUE(m.launch("fine", {1}, {32}, ok_args, mem).ok());
  auto args = m.args("reduces_multimem");
  args.add(mem.add(buf));
  LaunchResult r = m.launch("reduces_multimem", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported);
  EXPECT_EQ(cuda_error_code(r.fault), 801);
  EXPECT_NE(r.message.find("multimem"), std::string::npos) << r.message;
  EXPECT_EQ(r.status().kind(), ErrorKind::kUnimplemented);
}

TEST(PtxFaults, DeviceAssertIsATrap) {
  Module m(corpus_ptx("assert_trap", "sm_75"));
  ASSERT_TRUE(m.ok());
  std::vector<int> in = {1, 2, 3, -4, 5};
  DeviceTable mem;
  auto args = m.args("assert_positive");
  args.add(mem.add(in)).add(static_cast<int>(in.size()));
  LaunchResult r = m.launch("assert_positive", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kTrap) << r.message;
  EXPECT_EQ(cuda_error_code(r.fault), 710);
  EXPECT_NE(r.message.find("in[i] > 0"), std::string::npos) << r.message;

  in[3] = 4;
  auto ok_args = m.args("assert_positive");
  ok_args.add(mem.add(in)).add(static_cast<int>(in.size()));
  r = m.launch("assert_positive", {1}, {32}, ok_args, mem);
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(PtxFaults, WatchdogDeadlineAndCancel) {
  Module m(corpus_ptx("assert_trap", "sm_75"));
  ASSERT_TRUE(m.ok());
  std::vector<int> flag(1, 0);
  DeviceTable mem;
  auto args = m.args("spin_forever");
  args.add(mem.add(flag));
  LaunchEnv env;
  env.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  LaunchResult r = m.launch("spin_forever", {4}, {64}, args, mem, 0, env);
  EXPECT_EQ(r.fault, Fault::kTimeout) << r.message;
  EXPECT_EQ(cuda_error_code(r.fault), 702);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  std::atomic<bool> cancel{false};
  LaunchEnv env2;
  env2.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto args2 = m.args("spin_forever");
  args2.add(mem.add(flag));
  r = m.launch("spin_forever", {1}, {32}, args2, mem, 0, env2);
  canceller.join();
  EXPECT_EQ(r.fault, Fault::kTimeout) << r.message;

  // With the flag set the same kernel finishes.
  flag[0] = 1;
  auto args3 = m.args("spin_forever");
  args3.add(mem.add(flag));
  EXPECT_TRUE(m.launch("spin_forever", {1}, {32}, args3, mem).ok());
}

TEST(PtxFaults, BadLaunchShapes) {
  Module m(corpus_ptx("elementwise", "sm_75"));
  ASSERT_TRUE(m.ok());
  std::vector<float> a(64, 1.f);
  DeviceTable mem;
  auto args = m.args("vec_add");
  args.add(mem.add(a)).add(mem.add(a)).add(mem.add(a)).add(64);
  EXPECT_EQ(m.launch("vec_add", {1}, {2048}, args, mem).fault, Fault::kInvalidLaunch);
  EXPECT_EQ(m.launch("vec_add", {0}, {32}, args, mem).fault, Fault::kInvalidLaunch);
  EXPECT_EQ(m.launch("vec_add", {1}, {32}, args, mem, 1 << 20).fault, Fault::kInvalidLaunch);
  LaunchEnv env;
  Program& p = m.program();
  LaunchResult r = p.launch(p.find_kernel("vec_add"), {1}, {32}, 0, args.data(), 8, env);
  EXPECT_EQ(r.fault, Fault::kInvalidLaunch);
  EXPECT_EQ(p.launch(99, {1}, {32}, 0, args.data(), args.size(), env).fault, Fault::kInvalidLaunch);
}

TEST(PtxFaults, ConcurrentLaunchesOfOneProgram) {
  Module m(corpus_ptx("elementwise", "sm_75"));
  ASSERT_TRUE(m.ok());
  const int n = 4096;
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> a(n, static_cast<float>(t)), b(n, 1.f), c(n, 0.f);
      DeviceTable mem;
      auto args = m.args("vec_add");
      args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
      LaunchResult r = m.launch("vec_add", {n / 256}, {256}, args, mem);
      bool all = r.ok();
      for (float v : c) all = all && v == static_cast<float>(t) + 1.f;
      if (all) ++good;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 4);
}

// A pool that runs each task on its own thread and counts what it was asked.
class CountingPool : public WorkerPool {
 public:
  unsigned concurrency() const override { return 3; }
  void run(unsigned n, const std::function<void(unsigned)>& task) override {
    calls++;
    tasks += n;
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < n; ++i) ts.emplace_back([&task, i] { task(i); });
    for (auto& t : ts) t.join();
  }
  std::atomic<int> calls{0};
  std::atomic<unsigned> tasks{0};
};

TEST(PtxFaults, LaunchOnCallersWorkerPool) {
  Module m(corpus_ptx("elementwise", "sm_75"));
  ASSERT_TRUE(m.ok());
  const int n = 5000;
  std::vector<float> a(n, 1.5f), b(n, 2.f), c(n, 0.f);
  DeviceTable mem;
  auto args = m.args("vec_add");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
  CountingPool pool;
  LaunchEnv env;
  env.pool = &pool;
  LaunchResult r = m.launch("vec_add", {(n + 63) / 64}, {64}, args, mem, 0, env);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(pool.calls.load(), 1);
  EXPECT_EQ(pool.tasks.load(), 3u);
  for (float v : c) ASSERT_EQ(v, 3.5f);
}

}  // namespace
}  // namespace rgpu::ptx::testing
