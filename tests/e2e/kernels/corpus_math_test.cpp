// The rest of the corpus through rgpu (f64, f16, math functions,
// conversions, bits, atomics, warp votes and shuffles, device functions,
// divergence, local arrays, parameters by value, barrier reductions), with
// the tolerances of the interpreter's own corpus tests.
#include "kernels_e2e.h"
#include "reference.h"

namespace rgpu::e2e {
namespace {
namespace tk = rgpu::testkernels;

class CorpusMath : public KernelTest {};

TEST_F(CorpusMath, F64Math) {
  Module m("f64_math.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 257;
  auto in = random_vector<double>(n, -3, 3, 21);
  std::vector<double> want(6 * n);
  DeviceBuffer<double> din(in), dout(6 * n);
  ASSERT_CU(launch(m.function("f64_math"), {3}, {128}, din.ptr(), dout.ptr(), n));
  tk::f64_math(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(dout.download(), want, 1e-12, 1e-12));
}

TEST_F(CorpusMath, F16Math) {
  Module m("f16_math.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  std::vector<uint16_t> a(n), b(n);
  auto fa = random_vector<float>(n, -8, 8, 22), fb = random_vector<float>(n, -8, 8, 23);
  for (int i = 0; i < n; ++i) a[i] = tk::float_to_half(fa[i]), b[i] = tk::float_to_half(fb[i]);
  std::vector<uint16_t> want(3 * n);
  std::vector<float> wantf(2 * n);
  DeviceBuffer<uint16_t> da(a), db(b), dout(3 * n);
  DeviceBuffer<float> doutf(2 * n);
  ASSERT_CU(launch(m.function("f16_math"), {2}, {128}, da.ptr(), db.ptr(), dout.ptr(), doutf.ptr(), n));
  tk::f16_math(a.data(), b.data(), want.data(), wantf.data(), n);
  auto out = dout.download();
  for (int i = 0; i < 3 * n; ++i) {
    float w = tk::half_to_float(want[i]);
    EXPECT_NEAR(tk::half_to_float(out[i]), w, 1e-3 + 1e-3 * std::fabs(w)) << "index " << i;
  }
  EXPECT_TRUE(near_all(doutf.download(), wantf, 1e-3, 1e-3));
}

TEST_F(CorpusMath, MathFunctionsWithinApproxTolerance) {
  Module m("math_funcs.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto in = random_vector<float>(n, -1.5f, 1.5f, 24);
  std::vector<float> want(10 * n);
  DeviceBuffer<float> din(in), dout(10 * n);
  ASSERT_CU(launch(m.function("math_funcs"), {3}, {128}, din.ptr(), dout.ptr(), n));
  tk::math_funcs(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(dout.download(), want, 2e-5, 2e-5));
}

TEST_F(CorpusMath, MoreMathAnd64BitDivision) {
  Module m("math_more.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  auto in = random_vector<float>(n, -0.95f, 0.95f, 37);
  std::vector<float> want(12 * n);
  std::vector<double> wantd(3 * n);
  std::vector<long long> wantl(2 * n);
  DeviceBuffer<float> din(in), dout(12 * n);
  DeviceBuffer<double> doutd(3 * n);
  DeviceBuffer<long long> doutl(2 * n);
  ASSERT_CU(launch(m.function("math_more"), {2}, {128}, din.ptr(), dout.ptr(), doutd.ptr(), doutl.ptr(), n));
  tk::math_more(in.data(), want.data(), wantd.data(), wantl.data(), n);
  auto out = dout.download();
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 12; ++k) {
      double tol = (k >= 8 && k <= 10) ? 1e-2 : 2e-5;  // bf16/half results: one rounding step apart at most
      EXPECT_NEAR(out[12 * i + k], want[12 * i + k], tol * (1 + std::fabs(want[12 * i + k]))) << "i=" << i << " k=" << k;
    }
  EXPECT_TRUE(near_all(doutd.download(), wantd, 1e-12, 1e-12));
  EXPECT_EQ(doutl.download(), wantl);
}

TEST_F(CorpusMath, Conversions) {
  Module m("conversions.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 256;
  auto in = random_vector<float>(n, -300, 300, 25);
  in[0] = 2.5f, in[1] = -2.5f, in[2] = 0.5f, in[3] = 3.0e9f, in[4] = -3.0e9f;
  std::vector<int> wi(6 * n);
  std::vector<float> wf(3 * n);
  std::vector<long long> wl(n);
  DeviceBuffer<float> din(in), dof(3 * n);
  DeviceBuffer<int> doi(6 * n);
  DeviceBuffer<long long> dol(n);
  ASSERT_CU(launch(m.function("conversions"), {2}, {128}, din.ptr(), doi.ptr(), dof.ptr(), dol.ptr(), n));
  // Out-of-range float->int casts are undefined on the host; the device
  // saturates. Compare only in-range elements for those columns.
  tk::conversions(in.data(), wi.data(), wf.data(), wl.data(), n);
  auto oi = doi.download();
  auto ol = dol.download();
  for (int i = 5; i < n; ++i)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(oi[6 * i + k], wi[6 * i + k]) << "i=" << i << " k=" << k;
  EXPECT_EQ(oi[0 * 6 + 1], 2);  // round half to even
  EXPECT_EQ(oi[1 * 6 + 1], -2);
  EXPECT_EQ(oi[3 * 6 + 0], 2147483647);  // saturating conversion
  EXPECT_EQ(oi[4 * 6 + 0], -2147483647 - 1);
  EXPECT_TRUE(near_all(dof.download(), wf, 1e-6, 0));
  for (int i = 5; i < n; ++i) EXPECT_EQ(ol[i], wl[i]) << "i=" << i;
  EXPECT_EQ(ol[3], INT64_MAX);
  EXPECT_EQ(ol[4], INT64_MIN);
}

TEST_F(CorpusMath, BitIntrinsics) {
  Module m("bits.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto a = random_vector<unsigned>(n, 0, 0xffffffffu, 26), b = random_vector<unsigned>(n, 0, 0xffffffffu, 27);
  a[0] = 0, b[0] = 0, a[1] = 0x80000000u, b[1] = 1;
  std::vector<unsigned> want(12 * n);
  DeviceBuffer<unsigned> da(a), db(b), dout(12 * n);
  ASSERT_CU(launch(m.function("bits"), {3}, {128}, da.ptr(), db.ptr(), dout.ptr(), n));
  tk::bits(a.data(), b.data(), want.data(), n);
  auto out = dout.download();
  for (int i = 0; i < 12 * n; ++i) ASSERT_EQ(out[i], want[i]) << "element " << i % 12 << " of thread " << i / 12;
}

TEST_F(CorpusMath, GlobalAtomicsOfEveryKind) {
  Module m("atomics.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto in = random_vector<int>(n, -100000, 100000, 28);
  std::vector<int> iv = {0, 1 << 30, -(1 << 30), -1, 0, 0, 0, 0};
  std::vector<unsigned> uv = {0, 0};
  tk::AtomicsResult want = tk::atomics(in.data(), iv.data(), uv.data(), n);
  DeviceBuffer<int> din(in), div(iv);
  DeviceBuffer<unsigned> duv(uv);
  DeviceBuffer<float> dfv(std::vector<float>{0.f});
  DeviceBuffer<double> ddv(std::vector<double>{0.0});
  ASSERT_CU(launch(m.function("atomics"), {8}, {128}, din.ptr(), div.ptr(), duv.ptr(), dfv.ptr(), ddv.ptr(), n));
  auto got = div.download();
  for (int k = 0; k < 6; ++k) EXPECT_EQ(got[k], want.iv[k]) << "counter " << k;
  EXPECT_GE(got[6], 1);
  EXPECT_EQ(got[7], got[6]);  // only the CAS winner exchanges
  auto gotu = duv.download();
  EXPECT_EQ(gotu[0], want.uv[0]);
  EXPECT_EQ(gotu[1], want.uv[1]);
  EXPECT_NEAR(dfv.download()[0], want.f, 1.0);
  EXPECT_NEAR(ddv.download()[0], want.d, 1e-6);
}

TEST_F(CorpusMath, VoteBallot) {
  Module m("vote.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 256;
  auto in = random_vector<int>(n, -20, 120, 29);
  for (int l = 0; l < 32; ++l) in[32 + l] = l + 1;  // a warp with all positive
  std::vector<unsigned> wb(n / 32);
  std::vector<int> wf(n / 16);
  DeviceBuffer<int> din(in), dflags(n / 16);
  DeviceBuffer<unsigned> dballots(n / 32);
  ASSERT_CU(launch(m.function("vote_ballot"), {2}, {128}, din.ptr(), dballots.ptr(), dflags.ptr(), n));
  tk::vote_ballot(in.data(), wb.data(), wf.data(), n);
  EXPECT_EQ(dballots.download(), wb);
  EXPECT_EQ(dflags.download(), wf);
}

TEST_F(CorpusMath, WarpShufflesAndActivemask) {
  Module m("warp_ops.fatbin");
  ASSERT_TRUE(m.ok());
  const int threads = 128;
  auto in = random_vector<int>(threads, 0, 1000, 30);
  std::vector<int> want(5 * threads);
  DeviceBuffer<int> din(in), dout(5 * threads);
  ASSERT_CU(launch(m.function("warp_ops"), {2}, {64}, din.ptr(), dout.ptr()));
  tk::warp_ops(in.data(), want.data(), threads);
  EXPECT_EQ(dout.download(), want);
}

// The default architecture (sm_75) takes the shuffle path for the
// reductions; the sm_80 build uses redux.sync.
TEST_F(CorpusMath, WarpReductionsAndMatch) {
  for (const char* image : {"warp_sm80.fatbin", "warp_sm80.sm_80.fatbin"}) {
    SCOPED_TRACE(image);
    Module m(image);
    ASSERT_TRUE(m.ok());
    const int threads = 96;
    auto in = random_vector<int>(threads, -1000, 1000, 31);
    std::vector<int> want(4 * threads);
    DeviceBuffer<int> din(in), dout(4 * threads);
    ASSERT_CU(launch(m.function("warp_sm80"), {1}, {96}, din.ptr(), dout.ptr()));
    tk::warp_sm80(in.data(), want.data(), threads);
    EXPECT_EQ(dout.download(), want);
  }
}

TEST_F(CorpusMath, DeviceFunctionsWithLoops) {
  Module m("device_funcs.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 200;
  auto in = random_vector<unsigned>(n, 0, 100000, 32);
  std::vector<float> coeffs = {1.f, -0.5f, 0.25f, 2.f, -1.f, 0.125f};
  std::vector<int> want(2 * n);
  std::vector<float> wantf(n);
  DeviceBuffer<unsigned> din(in);
  DeviceBuffer<int> dout(2 * n);
  DeviceBuffer<float> dcoeffs(coeffs), doutf(n);
  ASSERT_CU(launch(m.function("device_funcs"), {2}, {128}, din.ptr(), dout.ptr(), dcoeffs.ptr(), doutf.ptr(), n));
  tk::device_funcs(in.data(), want.data(), coeffs.data(), wantf.data(), n);
  EXPECT_EQ(dout.download(), want);
  EXPECT_TRUE(near_all(doutf.download(), wantf, 1e-6, 1e-6));
}

// Recursion keeps a real call stack, with a local array in each frame.
TEST_F(CorpusMath, RecursiveDeviceFunctions) {
  Module m("device_funcs.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 100;
  auto in = random_vector<int>(n, 0, 100000000, 38);
  std::vector<int> want(3 * n);
  DeviceBuffer<int> din(in), dout(3 * n);
  ASSERT_CU(launch(m.function("recursion"), {1}, {128}, din.ptr(), dout.ptr(), n));
  tk::recursion(in.data(), want.data(), n);
  EXPECT_EQ(dout.download(), want);
}

TEST_F(CorpusMath, DivergenceAndReconvergence) {
  Module m("divergence.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 300, block = 128;
  auto in = random_vector<int>(n, 0, 5000, 33);
  std::vector<int> want(n);
  DeviceBuffer<int> din(in), dout(n);
  ASSERT_CU(launch(m.function("divergence"), {(n + block - 1) / block}, {block}, din.ptr(), dout.ptr(), n));
  tk::divergence(in.data(), want.data(), n, block);
  EXPECT_EQ(dout.download(), want);
}

TEST_F(CorpusMath, LocalMemoryArray) {
  Module m("local_array.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 333;
  auto in = random_vector<int>(n, -1000, 1000, 34);
  std::vector<int> want(n);
  DeviceBuffer<int> din(in), dout(n);
  ASSERT_CU(launch(m.function("local_array"), {3}, {128}, din.ptr(), dout.ptr(), n));
  tk::local_array(in.data(), want.data(), n);
  EXPECT_EQ(dout.download(), want);
}

TEST_F(CorpusMath, StructAndArrayByValue) {
  Module m("params.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 100;
  tk::Params p{1.5f, -7, 0.25, 'A', 123456789012LL};
  tk::Coeffs k{{0.5f, -1.f, 0.25f, 2.f, 0.f, -0.125f, 1.f, 0.0625f}};
  auto in = random_vector<float>(n, -1, 1, 35);
  std::vector<double> want(n);
  DeviceBuffer<float> din(in);
  DeviceBuffer<double> dout(n);
  CUfunction f = m.function("struct_param");
  // The layout the client read from the fatbin: two aggregates, then the rest.
  size_t offset = 0, size = 0;
  ASSERT_CU(cuFuncGetParamInfo(f, 0, &offset, &size));
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(size, sizeof(tk::Params));
  ASSERT_CU(cuFuncGetParamInfo(f, 1, &offset, &size));
  EXPECT_EQ(size, sizeof(tk::Coeffs));
  ASSERT_CU(launch(f, {1}, {128}, p, k, din.ptr(), dout.ptr(), n));
  tk::struct_param(p, k, in.data(), want.data(), n);
  EXPECT_TRUE(near_all(dout.download(), want, 1e-6, 1e-6));
}

// A __grid_constant__ struct whose address the kernel passes to a device function.
TEST_F(CorpusMath, GridConstantParameterByAddress) {
  Module m("params.fatbin");
  ASSERT_TRUE(m.ok());
  tk::Table t{};
  for (int i = 0; i < 16; ++i) t.a[i] = 0.5f * i - 2.f;
  t.n = 11;
  std::vector<float> want(64);
  DeviceBuffer<float> dout(64);
  ASSERT_CU(launch(m.function("grid_constant"), {1}, {64}, t, dout.ptr()));
  tk::grid_constant(t, want.data(), 64);
  EXPECT_TRUE(near_all(dout.download(), want, 1e-6, 1e-6));
}

TEST_F(CorpusMath, BarrierReductionsAndDotProducts) {
  Module m("block_reduce.fatbin");
  ASSERT_TRUE(m.ok());
  const int blocks = 3, block = 96;
  auto in = random_vector<int>(blocks * block, -100, 100, 36);
  for (int t = 0; t < block; ++t) in[block + t] = t;  // block 1: no value above 95 ... nor below -90
  std::vector<int> want(3 * blocks), wdots(4 * blocks * block);
  DeviceBuffer<int> din(in), dout(3 * blocks), ddots(4 * blocks * block);
  ASSERT_CU(launch(m.function("block_reduce"), {blocks}, {block}, din.ptr(), dout.ptr(), ddots.ptr()));
  tk::block_reduce(in.data(), want.data(), wdots.data(), blocks, block);
  EXPECT_EQ(dout.download(), want);
  EXPECT_EQ(ddots.download(), wdots);
}

}  // namespace
}  // namespace rgpu::e2e
