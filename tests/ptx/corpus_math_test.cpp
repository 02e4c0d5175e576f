// Runs the rest of the corpus (f64, f16, math functions, conversions, bits,
// atomics, warp votes and shuffles, device functions, divergence, local
// arrays, parameters by value, printf) and compares with the host references.
#include <algorithm>

#include "harness.h"
#include "reference.h"

namespace rgpu::ptx::testing {
namespace tk = rgpu::testkernels;

class CorpusMath : public ::testing::TestWithParam<std::string> {
 protected:
  Module load(const std::string& stem) { return Module(corpus_ptx(stem, GetParam())); }
};

TEST_P(CorpusMath, F64Math) {
  RGPU_CORPUS_LOAD(m, "f64_math");
  ASSERT_TRUE(m.ok());
  const int n = 257;
  auto in = random_vector<double>(n, -3, 3, 21);
  std::vector<double> out(6 * n, 0.0), want(6 * n);
  DeviceTable mem;
  auto args = m.args("f64_math");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("f64_math", {3}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::f64_math(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(out, want, 1e-12, 1e-12));
}

TEST_P(CorpusMath, F16Math) {
  RGPU_CORPUS_LOAD(m, "f16_math");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  std::vector<uint16_t> a(n), b(n);
  auto fa = random_vector<float>(n, -8, 8, 22), fb = random_vector<float>(n, -8, 8, 23);
  for (int i = 0; i < n; ++i) a[i] = tk::float_to_half(fa[i]), b[i] = tk::float_to_half(fb[i]);
  std::vector<uint16_t> out(3 * n, 0), want(3 * n);
  std::vector<float> outf(2 * n, 0.f), wantf(2 * n);
  DeviceTable mem;
  auto args = m.args("f16_math");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(out)).add(mem.add(outf)).add(n);
  LaunchResult r = m.launch("f16_math", {2}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::f16_math(a.data(), b.data(), want.data(), wantf.data(), n);
  for (int i = 0; i < 3 * n; ++i)
    EXPECT_NEAR(tk::half_to_float(out[i]), tk::half_to_float(want[i]), 1e-3 + 1e-3 * std::fabs(tk::half_to_float(want[i])))
        << "index " << i;
  EXPECT_TRUE(near_all(outf, wantf, 1e-3, 1e-3));
}

TEST_P(CorpusMath, MathFunctionsWithinApproxTolerance) {
  RGPU_CORPUS_LOAD(m, "math_funcs");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto in = random_vector<float>(n, -1.5f, 1.5f, 24);
  std::vector<float> out(10 * n, 0.f), want(10 * n);
  DeviceTable mem;
  auto args = m.args("math_funcs");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("math_funcs", {3}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::math_funcs(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(out, want, 2e-5, 2e-5));
}

TEST_P(CorpusMath, MoreMathAnd64BitDivision) {
  RGPU_CORPUS_LOAD(m, "math_more");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  auto in = random_vector<float>(n, -0.95f, 0.95f, 37);
  std::vector<float> out(12 * n, 0.f), want(12 * n);
  std::vector<double> outd(3 * n, 0.0), wantd(3 * n);
  std::vector<long long> outl(2 * n, 0), wantl(2 * n);
  DeviceTable mem;
  auto args = m.args("math_more");
  args.add(mem.add(in)).add(mem.add(out)).add(mem.add(outd)).add(mem.add(outl)).add(n);
  LaunchResult r = m.launch("math_more", {2}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::math_more(in.data(), want.data(), wantd.data(), wantl.data(), n);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 12; ++k) {
      double tol = (k >= 8 && k <= 10) ? 1e-2 : 2e-5;  // bf16/half results: one rounding step apart at most
      EXPECT_NEAR(out[12 * i + k], want[12 * i + k], tol * (1 + std::fabs(want[12 * i + k]))) << "i=" << i << " k=" << k;
    }
  EXPECT_TRUE(near_all(outd, wantd, 1e-12, 1e-12));
  EXPECT_EQ(outl, wantl);
}

TEST_P(CorpusMath, Conversions) {
  RGPU_CORPUS_LOAD(m, "conversions");
  ASSERT_TRUE(m.ok());
  const int n = 256;
  auto in = random_vector<float>(n, -300, 300, 25);
  in[0] = 2.5f, in[1] = -2.5f, in[2] = 0.5f, in[3] = 3.0e9f, in[4] = -3.0e9f;
  std::vector<int> oi(6 * n, 0), wi(6 * n);
  std::vector<float> of(3 * n, 0.f), wf(3 * n);
  std::vector<long long> ol(n, 0), wl(n);
  DeviceTable mem;
  auto args = m.args("conversions");
  args.add(mem.add(in)).add(mem.add(oi)).add(mem.add(of)).add(mem.add(ol)).add(n);
  LaunchResult r = m.launch("conversions", {2}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  // The host reference's out-of-range float->int casts are undefined; the
  // device saturates. Compare only in-range elements for those columns.
  tk::conversions(in.data(), wi.data(), wf.data(), wl.data(), n);
  for (int i = 5; i < n; ++i)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(oi[6 * i + k], wi[6 * i + k]) << "i=" << i << " k=" << k;
  EXPECT_EQ(oi[0 * 6 + 1], 2);   // round half to even
  EXPECT_EQ(oi[1 * 6 + 1], -2);
  EXPECT_EQ(oi[3 * 6 + 0], 2147483647);   // saturating conversion
  EXPECT_EQ(oi[4 * 6 + 0], -2147483647 - 1);
  EXPECT_TRUE(near_all(of, wf, 1e-6, 0));
  for (int i = 5; i < n; ++i) EXPECT_EQ(ol[i], wl[i]) << "i=" << i;
  EXPECT_EQ(ol[3], INT64_MAX);
  EXPECT_EQ(ol[4], INT64_MIN);
}

TEST_P(CorpusMath, BitIntrinsics) {
  RGPU_CORPUS_LOAD(m, "bits");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto a = random_vector<unsigned>(n, 0, 0xffffffffu, 26), b = random_vector<unsigned>(n, 0, 0xffffffffu, 27);
  a[0] = 0, b[0] = 0, a[1] = 0x80000000u, b[1] = 1;
  std::vector<unsigned> out(12 * n, 0), want(12 * n);
  DeviceTable mem;
  auto args = m.args("bits");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("bits", {3}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::bits(a.data(), b.data(), want.data(), n);
  for (int i = 0; i < 12 * n; ++i) ASSERT_EQ(out[i], want[i]) << "element " << i % 12 << " of thread " << i / 12;
}

TEST_P(CorpusMath, GlobalAtomicsOfEveryKind) {
  RGPU_CORPUS_LOAD(m, "atomics");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto in = random_vector<int>(n, -100000, 100000, 28);
  std::vector<int> iv = {0, 1 << 30, -(1 << 30), -1, 0, 0, 0, 0};
  std::vector<unsigned> uv = {0, 0};
  std::vector<float> fv = {0.f};
  std::vector<double> dv = {0.0};
  tk::AtomicsResult want = tk::atomics(in.data(), iv.data(), uv.data(), n);
  DeviceTable mem;
  auto args = m.args("atomics");
  args.add(mem.add(in)).add(mem.add(iv)).add(mem.add(uv)).add(mem.add(fv)).add(mem.add(dv)).add(n);
  LaunchEnv env;
  env.workers = 4;
  LaunchResult r = m.launch("atomics", {8}, {128}, args, mem, 0, env);
  ASSERT_TRUE(r.ok()) << r.message;
  for (int k = 0; k < 6; ++k) EXPECT_EQ(iv[k], want.iv[k]) << "counter " << k;
  EXPECT_GE(iv[6], 1);
  EXPECT_EQ(iv[7], iv[6]);  // only the CAS winner exchanges
  EXPECT_EQ(uv[0], want.uv[0]);
  EXPECT_EQ(uv[1], want.uv[1]);
  EXPECT_NEAR(fv[0], want.f, 1.0);
  EXPECT_NEAR(dv[0], want.d, 1e-6);
}

TEST_P(CorpusMath, VoteBallot) {
  RGPU_CORPUS_LOAD(m, "vote");
  ASSERT_TRUE(m.ok());
  const int n = 256;
  auto in = random_vector<int>(n, -20, 120, 29);
  for (int l = 0; l < 32; ++l) in[32 + l] = l + 1;  // a warp with all positive
  std::vector<unsigned> ballots(n / 32, 0), wb(n / 32);
  std::vector<int> flags(n / 16, 0), wf(n / 16);
  DeviceTable mem;
  auto args = m.args("vote_ballot");
  args.add(mem.add(in)).add(mem.add(ballots)).add(mem.add(flags)).add(n);
  LaunchResult r = m.launch("vote_ballot", {2}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::vote_ballot(in.data(), wb.data(), wf.data(), n);
  EXPECT_EQ(ballots, wb);
  EXPECT_EQ(flags, wf);
}

TEST_P(CorpusMath, WarpShufflesAndActivemask) {
  RGPU_CORPUS_LOAD(m, "warp_ops");
  ASSERT_TRUE(m.ok());
  const int threads = 128;
  auto in = random_vector<int>(threads, 0, 1000, 30);
  std::vector<int> out(5 * threads, 0), want(5 * threads);
  DeviceTable mem;
  auto args = m.args("warp_ops");
  args.add(mem.add(in)).add(mem.add(out));
  LaunchResult r = m.launch("warp_ops", {2}, {64}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::warp_ops(in.data(), want.data(), threads);
  EXPECT_EQ(out, want);
}

TEST_P(CorpusMath, WarpReduxAndMatch) {
  RGPU_CORPUS_LOAD(m, "warp_sm80");
  ASSERT_TRUE(m.ok());
  const int threads = 96;
  auto in = random_vector<int>(threads, -1000, 1000, 31);
  std::vector<int> out(4 * threads, 0), want(4 * threads);
  DeviceTable mem;
  auto args = m.args("warp_sm80");
  args.add(mem.add(in)).add(mem.add(out));
  LaunchResult r = m.launch("warp_sm80", {1}, {96}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::warp_sm80(in.data(), want.data(), threads);
  EXPECT_EQ(out, want);
}

TEST_P(CorpusMath, DeviceFunctionsWithLoops) {
  RGPU_CORPUS_LOAD(m, "device_funcs");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  auto in = random_vector<unsigned>(n, 0, 100000, 32);
  std::vector<float> coeffs = {1.f, -0.5f, 0.25f, 2.f, -1.f, 0.125f};
  std::vector<int> out(2 * n, 0), want(2 * n);
  std::vector<float> outf(n, 0.f), wantf(n);
  DeviceTable mem;
  auto args = m.args("device_funcs");
  args.add(mem.add(in)).add(mem.add(out)).add(mem.add(coeffs)).add(mem.add(outf)).add(n);
  LaunchResult r = m.launch("device_funcs", {2}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::device_funcs(in.data(), want.data(), coeffs.data(), wantf.data(), n);
  EXPECT_EQ(out, want);
  EXPECT_TRUE(near_all(outf, wantf, 1e-6, 1e-6));
}

TEST_P(CorpusMath, RecursiveDeviceFunctions) {
  RGPU_CORPUS_LOAD(m, "device_funcs");
  ASSERT_TRUE(m.ok());
  const int n = 100;
  auto in = random_vector<int>(n, 0, 100000000, 38);
  std::vector<int> out(3 * n, 0), want(3 * n);
  DeviceTable mem;
  auto args = m.args("recursion");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("recursion", {1}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::recursion(in.data(), want.data(), n);
  EXPECT_EQ(out, want);
}

TEST_P(CorpusMath, DivergenceAndReconvergence) {
  RGPU_CORPUS_LOAD(m, "divergence");
  ASSERT_TRUE(m.ok());
  const int n = 300, block = 128;
  auto in = random_vector<int>(n, 0, 5000, 33);
  std::vector<int> out(n, 0), want(n);
  DeviceTable mem;
  auto args = m.args("divergence");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("divergence", {(n + block - 1) / block}, {block}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::divergence(in.data(), want.data(), n, block);
  EXPECT_EQ(out, want);
}

TEST_P(CorpusMath, LocalMemoryArray) {
  RGPU_CORPUS_LOAD(m, "local_array");
  ASSERT_TRUE(m.ok());
  const int n = 333;
  auto in = random_vector<int>(n, -1000, 1000, 34);
  std::vector<int> out(n, 0), want(n);
  DeviceTable mem;
  auto args = m.args("local_array");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("local_array", {3}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::local_array(in.data(), want.data(), n);
  EXPECT_EQ(out, want);
}

TEST_P(CorpusMath, StructAndArrayByValue) {
  RGPU_CORPUS_LOAD(m, "params");
  ASSERT_TRUE(m.ok());
  const int n = 100;
  tk::Params p{1.5f, -7, 0.25, 'A', 123456789012LL};
  tk::Coeffs k{{0.5f, -1.f, 0.25f, 2.f, 0.f, -0.125f, 1.f, 0.0625f}};
  auto in = random_vector<float>(n, -1, 1, 35);
  std::vector<double> out(n, 0.0), want(n);
  DeviceTable mem;
  auto args = m.args("struct_param");
  args.add(p).add(k).add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("struct_param", {1}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::struct_param(p, k, in.data(), want.data(), n);
  EXPECT_TRUE(near_all(out, want, 1e-6, 1e-6));
}

TEST_P(CorpusMath, GridConstantParameterByAddress) {
  RGPU_CORPUS_LOAD(m, "params");
  ASSERT_TRUE(m.ok());
  tk::Table t{};
  for (int i = 0; i < 16; ++i) t.a[i] = 0.5f * i - 2.f;
  t.n = 11;
  std::vector<float> out(64, 0.f), want(64);
  DeviceTable mem;
  auto args = m.args("grid_constant");
  args.add(t).add(mem.add(out));
  LaunchResult r = m.launch("grid_constant", {1}, {64}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::grid_constant(t, want.data(), 64);
  EXPECT_TRUE(near_all(out, want, 1e-6, 1e-6));
}

TEST_P(CorpusMath, DevicePrintf) {
  RGPU_CORPUS_LOAD(m, "printf");
  ASSERT_TRUE(m.ok());
  DeviceTable mem;
  auto args = m.args("hello_printf");
  args.add(42);
  LaunchResult r = m.launch("hello_printf", {2}, {64}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  auto lines = m.printed();
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, tk::hello_printf_lines(42, 2, 64));
}

TEST_P(CorpusMath, BarrierReductionsAndDotProducts) {
  RGPU_CORPUS_LOAD(m, "block_reduce");
  ASSERT_TRUE(m.ok());
  const int blocks = 3, block = 96;
  auto in = random_vector<int>(blocks * block, -100, 100, 36);
  for (int t = 0; t < block; ++t) in[block + t] = t;  // block 1: no value above 95 ... nor below -90
  std::vector<int> out(3 * blocks, -1), want(3 * blocks), dots(4 * blocks * block, 0), wdots(4 * blocks * block);
  DeviceTable mem;
  auto args = m.args("block_reduce");
  args.add(mem.add(in)).add(mem.add(out)).add(mem.add(dots));
  LaunchResult r = m.launch("block_reduce", {blocks}, {block}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::block_reduce(in.data(), want.data(), wdots.data(), blocks, block);
  EXPECT_EQ(out, want);
  EXPECT_EQ(dots, wdots);
}

INSTANTIATE_TEST_SUITE_P(Archs, CorpusMath, ::testing::Values("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"));
INSTANTIATE_TEST_SUITE_P(Cuda12, CorpusMath, ::testing::ValuesIn(cuda12_archs()));

}  // namespace rgpu::ptx::testing
