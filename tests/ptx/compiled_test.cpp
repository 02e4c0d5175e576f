// The kernels the throughput figures are about run compiled, not on the
// interpreter behind the compiler's back: a kernel the compiler covers but
// fails to build falls back silently (a log line), which would leave the
// corpus tests passing and the compiled path untested.
#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

struct Case {
  const char* stem;
  const char* kernel;
  Dim3 grid, block;
};

TEST(PtxCompiled, CorpusKernelsOfTheBenchmarkRunCompiled) {
#ifndef RGPU_PTX_JIT
  GTEST_SKIP() << "built without the compiled path (no LLVM)";
#else
  const int n = 4096, mm = 32;
  std::vector<float> a(n, 1.5f), b(n, 2.5f), c(n), out10(10 * n);
  std::vector<float> A(mm * mm, 0.5f), Bm(mm * mm, 0.25f), C(mm * mm);
  std::vector<int> ints(n, 3), total(1), dout(n);
  std::vector<float> partial(n);
  for (const Case& cs : {Case{"elementwise", "vec_add", {n / 256}, {256}},
                         Case{"matmul", "matmul_tiled", {mm / 16, mm / 16}, {16, 16}},
                         Case{"reduce", "reduce_shfl", {4}, {256}}, Case{"reduce", "reduce_shared", {4}, {256}},
                         Case{"math_funcs", "math_funcs", {4}, {256}},
                         Case{"divergence", "divergence", {n / 128}, {128}}}) {
    SCOPED_TRACE(cs.kernel);
    Module m(corpus_ptx(cs.stem, "sm_75"));
    ASSERT_TRUE(m.ok());
    DeviceTable mem;
    auto args = m.args(cs.kernel);
    std::string k = cs.kernel;
    if (k == "vec_add") args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(n);
    if (k == "matmul_tiled") args.add(mem.add(A)).add(mem.add(Bm)).add(mem.add(C)).add(mm).add(mm).add(mm);
    if (k == "reduce_shfl") args.add(mem.add(ints)).add(mem.add(total)).add(n);
    if (k == "reduce_shared") args.add(mem.add(a)).add(mem.add(partial)).add(n);
    if (k == "math_funcs") args.add(mem.add(a)).add(mem.add(out10)).add(n);
    if (k == "divergence") args.add(mem.add(ints)).add(mem.add(dout)).add(n);
    LaunchEnv env;
    env.jit = 1;
    LaunchResult r = m.launch(cs.kernel, cs.grid, cs.block, args, mem, 0, env);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_TRUE(r.compiled) << "fell back to the interpreter (RGPU_LOG_LEVEL=info names the reason)";
  }
  EXPECT_EQ(total[0], 3 * n);
  EXPECT_EQ(c[0], 4.0f);
  EXPECT_EQ(partial[0], 512 * 1.5f);
#endif
}

}  // namespace
}  // namespace rgpu::ptx::testing
