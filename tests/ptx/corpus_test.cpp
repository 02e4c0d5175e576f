// Runs the kernel corpus (maps, matrix multiply, reductions, scans,
// histograms, transposes, stencil) through the interpreter for each target
// architecture and compares with the host references.
#include "harness.h"
#include "reference.h"

namespace rgpu::ptx::testing {
namespace tk = rgpu::testkernels;

class Corpus : public ::testing::TestWithParam<std::string> {
 protected:
  Module load(const std::string& stem) { return Module(corpus_ptx(stem, GetParam())); }
};

TEST_P(Corpus, VecAddAndSaxpy) {
  RGPU_CORPUS_LOAD(m, "elementwise");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto a = random_vector<float>(n, -10, 10, 1), b = random_vector<float>(n, -10, 10, 2);
  std::vector<float> c(n, 0.f), want(n);
  DeviceTable mem;
  auto args = m.args("vec_add");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
  LaunchResult r = m.launch("vec_add", {(n + 127) / 128}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::vec_add(a.data(), b.data(), want.data(), n);
  EXPECT_EQ(c, want);
  EXPECT_GE(r.thread_instructions, static_cast<uint64_t>(n) * 5);

  std::vector<float> y = b, ywant = b;
  auto sa = m.args("saxpy");
  sa.add(2.5f).add(mem.add(a)).add(mem.add(y)).add(n);
  r = m.launch("saxpy", {3}, {64}, sa, mem);  // grid-stride loop
  ASSERT_TRUE(r.ok()) << r.message;
  tk::saxpy(2.5f, a.data(), ywant.data(), n);
  EXPECT_TRUE(near_all(y, ywant, 1e-6, 1e-6));
}

TEST_P(Corpus, IntegerDivisionByVariables) {
  RGPU_CORPUS_LOAD(m, "elementwise");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto a = random_vector<int>(n, -100000, 100000, 3), b = random_vector<int>(n, -500, 500, 4);
  for (auto& v : b)
    if (v == 0) v = 7;
  std::vector<int> out(8 * n, 0), want(8 * n);
  DeviceTable mem;
  auto args = m.args("int_ops");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("int_ops", {3}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::int_ops(a.data(), b.data(), want.data(), n);
  EXPECT_EQ(out, want);
}

TEST_P(Corpus, MatmulNaiveAndTiled) {
  RGPU_CORPUS_LOAD(m, "matmul");
  ASSERT_TRUE(m.ok());
  const int M = 37, N = 45, K = 29;
  auto A = random_vector<float>(M * K, -1, 1, 5), B = random_vector<float>(K * N, -1, 1, 6);
  std::vector<float> want(M * N);
  tk::matmul(A.data(), B.data(), want.data(), M, N, K);
  for (const char* name : {"matmul_naive", "matmul_tiled"}) {
    std::vector<float> C(M * N, -1.f);
    DeviceTable mem;
    auto args = m.args(name);
    args.add(mem.add(A)).add(mem.add(B)).add(mem.add(C)).add(M).add(N).add(K);
    LaunchResult r = m.launch(name, {(N + 15) / 16, (M + 15) / 16}, {16, 16}, args, mem);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message;
    EXPECT_TRUE(near_all(C, want, 1e-5, 1e-5)) << name;
  }
}

TEST_P(Corpus, ReduceSharedMemory) {
  RGPU_CORPUS_LOAD(m, "reduce");
  ASSERT_TRUE(m.ok());
  const int n = 5000, block = 256;
  auto in = random_vector<float>(n, 0, 1, 7);
  int blocks = (n + 2 * block - 1) / (2 * block);
  std::vector<float> partial(blocks, 0.f), want(blocks);
  DeviceTable mem;
  auto args = m.args("reduce_shared");
  args.add(mem.add(in)).add(mem.add(partial)).add(n);
  LaunchResult r = m.launch("reduce_shared", {static_cast<uint32_t>(blocks)}, {block}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::reduce_shared(in.data(), want.data(), n, block);
  EXPECT_TRUE(near_all(partial, want, 1e-4, 1e-4));
}

TEST_P(Corpus, ReduceWarpShuffle) {
  RGPU_CORPUS_LOAD(m, "reduce");
  ASSERT_TRUE(m.ok());
  const int n = 10007;
  auto in = random_vector<int>(n, -1000, 1000, 8);
  std::vector<int> total(1, 0);
  DeviceTable mem;
  auto args = m.args("reduce_shfl");
  args.add(mem.add(in)).add(mem.add(total)).add(n);
  LaunchResult r = m.launch("reduce_shfl", {8}, {160}, args, mem);  // 5 warps per block
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(total[0], tk::reduce_sum(in.data(), n));
  // Each kernel's static shared memory holds only its own variables.
  EXPECT_EQ(m.kernel("reduce_shfl").static_shared_bytes, 32 * sizeof(int));
  EXPECT_EQ(m.kernel("reduce_shared").static_shared_bytes, 256 * sizeof(float));
}

TEST_P(Corpus, InclusiveAndExclusiveScan) {
  RGPU_CORPUS_LOAD(m, "scan");
  ASSERT_TRUE(m.ok());
  for (int n : {1000, 1024}) {
    auto in = random_vector<int>(n, -50, 50, 9 + n);
    std::vector<int> out(n, 0), want(n);
    DeviceTable mem;
    auto args = m.args("scan_inclusive");
    args.add(mem.add(in)).add(mem.add(out)).add(n);
    LaunchResult r = m.launch("scan_inclusive", {1}, {1024}, args, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    tk::scan_inclusive(in.data(), want.data(), n);
    EXPECT_EQ(out, want) << "n=" << n;

    std::vector<int> ex(n, 0);
    auto eargs = m.args("scan_exclusive");
    eargs.add(mem.add(in)).add(mem.add(ex)).add(n);
    r = m.launch("scan_exclusive", {1}, {1024}, eargs, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    tk::scan_exclusive(in.data(), want.data(), n);
    EXPECT_EQ(ex, want) << "n=" << n;
  }
}

TEST_P(Corpus, HistogramGlobalAndSharedAtomics) {
  RGPU_CORPUS_LOAD(m, "histogram");
  ASSERT_TRUE(m.ok());
  const int n = 20000;
  auto in = random_vector<unsigned char>(n, 0, 255, 10);
  std::vector<unsigned> want(256);
  tk::histogram(in.data(), want.data(), n);
  for (const char* name : {"histogram_global", "histogram_shared"}) {
    std::vector<unsigned> bins(256, 0);
    DeviceTable mem;
    auto args = m.args(name);
    args.add(mem.add(in)).add(mem.add(bins)).add(n);
    LaunchEnv env;
    env.workers = 4;  // blocks on several threads: global atomics must be atomic
    LaunchResult r = m.launch(name, {16}, {192}, args, mem, 0, env);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message;
    EXPECT_EQ(bins, want) << name;
  }
}

TEST_P(Corpus, TransposeNaiveAndTiled) {
  RGPU_CORPUS_LOAD(m, "transpose");
  ASSERT_TRUE(m.ok());
  const int rows = 70, cols = 45;
  auto in = random_vector<float>(rows * cols, -5, 5, 11);
  std::vector<float> want(rows * cols);
  tk::transpose(in.data(), want.data(), rows, cols);
  {
    std::vector<float> out(rows * cols, 0.f);
    DeviceTable mem;
    auto args = m.args("transpose_naive");
    args.add(mem.add(in)).add(mem.add(out)).add(rows).add(cols);
    LaunchResult r = m.launch("transpose_naive", {(cols + 15) / 16, (rows + 15) / 16}, {16, 16}, args, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(out, want);
  }
  {
    std::vector<float> out(rows * cols, 0.f);
    DeviceTable mem;
    auto args = m.args("transpose_tiled");
    args.add(mem.add(in)).add(mem.add(out)).add(rows).add(cols);
    LaunchResult r = m.launch("transpose_tiled", {(cols + 31) / 32, (rows + 31) / 32}, {32, 8}, args, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(out, want);
  }
}

TEST_P(Corpus, Stencil1D) {
  RGPU_CORPUS_LOAD(m, "stencil");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto in = random_vector<float>(n, -1, 1, 12);
  std::vector<float> out(n, 0.f), want(n);
  DeviceTable mem;
  auto args = m.args("stencil_1d");
  args.add(mem.add(in)).add(mem.add(out)).add(n);
  LaunchResult r = m.launch("stencil_1d", {(n + 127) / 128}, {128}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  tk::stencil_1d(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(out, want, 1e-5, 1e-5));
}

TEST_P(Corpus, DynamicSharedMemory) {
  RGPU_CORPUS_LOAD(m, "dynamic_shared");
  ASSERT_TRUE(m.ok());
  const int n = 1000, block = 128;
  auto data = random_vector<int>(n, 0, 1 << 20, 13);
  std::vector<int> want = data;
  DeviceTable mem;
  auto args = m.args("reverse_dynamic");
  args.add(mem.add(data)).add(n);
  LaunchResult r = m.launch("reverse_dynamic", {(n + block - 1) / block}, {block}, args, mem, block * sizeof(int));
  ASSERT_TRUE(r.ok()) << r.message;
  tk::reverse_dynamic(want.data(), n, block);
  EXPECT_EQ(data, want);
  // Without the dynamic bytes the kernel writes past the block's shared memory.
  auto again = m.args("reverse_dynamic");
  again.add(mem.add(data)).add(n);
  r = m.launch("reverse_dynamic", {1}, {block}, again, mem, 0);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
}

INSTANTIATE_TEST_SUITE_P(Archs, Corpus, ::testing::Values("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"));
INSTANTIATE_TEST_SUITE_P(Cuda12, Corpus, ::testing::ValuesIn(cuda12_archs()));

}  // namespace rgpu::ptx::testing
