// The kernel corpus (maps, matrix multiply, reductions, scans, histograms,
// transposes, stencil, dynamic shared memory) through rgpu with the driver
// API, each output checked against the host references. Launches go through
// kernelParams, `extra`, cuLaunchKernelEx and the library API, and images are
// fatbins, plain PTX and compressed fatbins.
#include "kernels_e2e.h"
#include "reference.h"

namespace rgpu::e2e {
namespace {
namespace tk = rgpu::testkernels;

class Corpus : public KernelTest {};

TEST_F(Corpus, VecAddWithKernelParams) {
  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto a = random_vector<float>(n, -10, 10, 1), b = random_vector<float>(n, -10, 10, 2);
  std::vector<float> want(n);
  DeviceBuffer<float> da(a), db(b), dc(n);
  ASSERT_CU(cuMemsetD32(dc.ptr(), 0, n));
  ASSERT_CU(launch(m.function("vec_add"), {(n + 127) / 128}, {128}, da.ptr(), db.ptr(), dc.ptr(), n));
  tk::vec_add(a.data(), b.data(), want.data(), n);
  EXPECT_EQ(dc.download(), want);
}

// saxpy's arguments packed by hand at the offsets cuFuncGetParamInfo reports,
// passed through `extra`.
TEST_F(Corpus, SaxpyWithExtraBuffer) {
  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  CUfunction f = m.function("saxpy");
  const int n = 1000;
  auto x = random_vector<float>(n, -10, 10, 3), y = random_vector<float>(n, -10, 10, 4);
  DeviceBuffer<float> dx(x), dy(y);
  size_t offset[4], size[4];
  for (size_t i = 0; i < 4; ++i) ASSERT_CU(cuFuncGetParamInfo(f, i, &offset[i], &size[i]));
  std::vector<unsigned char> buf(offset[3] + size[3], 0);
  const float alpha = 2.5f;
  const CUdeviceptr px = dx.ptr(), py = dy.ptr();
  std::memcpy(buf.data() + offset[0], &alpha, sizeof alpha);
  std::memcpy(buf.data() + offset[1], &px, sizeof px);
  std::memcpy(buf.data() + offset[2], &py, sizeof py);
  std::memcpy(buf.data() + offset[3], &n, sizeof n);
  size_t buf_size = buf.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size,
                   CU_LAUNCH_PARAM_END};
  ASSERT_CU(cuLaunchKernel(f, 3, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra));  // grid-stride loop
  tk::saxpy(alpha, x.data(), y.data(), n);
  EXPECT_TRUE(near_all(dy.download(), y, 1e-6, 1e-6));
}

TEST_F(Corpus, IntegerDivisionWithLaunchKernelEx) {
  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 300;
  auto a = random_vector<int>(n, -100000, 100000, 5), b = random_vector<int>(n, -500, 500, 6);
  for (auto& v : b)
    if (v == 0) v = 7;
  std::vector<int> want(8 * n);
  DeviceBuffer<int> da(a), db(b), dout(8 * n);
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attr.value.priority = 0;
  CUlaunchConfig config{};
  config.gridDimX = 3, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = 128, config.blockDimY = 1, config.blockDimZ = 1;
  config.hStream = s;
  config.attrs = &attr;
  config.numAttrs = 1;
  CUdeviceptr pa = da.ptr(), pb = db.ptr(), po = dout.ptr();
  int count = n;
  void* params[] = {&pa, &pb, &po, &count};
  ASSERT_CU(cuLaunchKernelEx(&config, m.function("int_ops"), params, nullptr));
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuStreamDestroy(s));
  tk::int_ops(a.data(), b.data(), want.data(), n);
  EXPECT_EQ(dout.download(), want);
}

// From a fatbin whose payloads are compressed.
TEST_F(Corpus, MatmulNaiveAndTiledFromCompressedFatbin) {
  Module m("matmul.z.fatbin");
  ASSERT_TRUE(m.ok());
  const int M = 37, N = 45, K = 29;
  auto A = random_vector<float>(M * K, -1, 1, 7), B = random_vector<float>(K * N, -1, 1, 8);
  std::vector<float> want(M * N);
  tk::matmul(A.data(), B.data(), want.data(), M, N, K);
  DeviceBuffer<float> dA(A), dB(B);
  for (const char* name : {"matmul_naive", "matmul_tiled"}) {
    DeviceBuffer<float> dC(M * N);
    ASSERT_CU(cuMemsetD32(dC.ptr(), 0xBF800000u, M * N));  // -1.0f
    ASSERT_CU(launch(m.function(name), {(N + 15) / 16, (M + 15) / 16}, {16, 16}, dA.ptr(), dB.ptr(), dC.ptr(), M,
                     N, K));
    EXPECT_TRUE(near_all(dC.download(), want, 1e-5, 1e-5)) << name;
  }
}

// From PTX text.
TEST_F(Corpus, ReduceSharedMemoryAndWarpShuffleFromPtx) {
  Module m("reduce.ptx");
  ASSERT_TRUE(m.ok());
  {
    const int n = 5000, block = 256, blocks = (n + 2 * block - 1) / (2 * block);
    auto in = random_vector<float>(n, 0, 1, 9);
    std::vector<float> want(blocks);
    DeviceBuffer<float> din(in), dpartial(blocks);
    ASSERT_CU(launch(m.function("reduce_shared"), {blocks}, {block}, din.ptr(), dpartial.ptr(), n));
    tk::reduce_shared(in.data(), want.data(), n, block);
    EXPECT_TRUE(near_all(dpartial.download(), want, 1e-4, 1e-4));
  }
  {
    const int n = 10007;
    auto in = random_vector<int>(n, -1000, 1000, 10);
    DeviceBuffer<int> din(in), dtotal(1);
    ASSERT_CU(cuMemsetD32(dtotal.ptr(), 0, 1));
    ASSERT_CU(launch(m.function("reduce_shfl"), {8}, {160}, din.ptr(), dtotal.ptr(), n));  // 5 warps per block
    EXPECT_EQ(dtotal.download()[0], tk::reduce_sum(in.data(), n));
  }
}

TEST_F(Corpus, InclusiveAndExclusiveScanFromCompressedFatbin) {
  Module m("scan.z.fatbin");
  ASSERT_TRUE(m.ok());
  for (int n : {1000, 1024}) {
    auto in = random_vector<int>(n, -50, 50, 11 + n);
    std::vector<int> want(n);
    DeviceBuffer<int> din(in), dout(n), dex(n);
    ASSERT_CU(launch(m.function("scan_inclusive"), {1}, {1024}, din.ptr(), dout.ptr(), n));
    ASSERT_CU(launch(m.function("scan_exclusive"), {1}, {1024}, din.ptr(), dex.ptr(), n));
    tk::scan_inclusive(in.data(), want.data(), n);
    EXPECT_EQ(dout.download(), want) << "n=" << n;
    tk::scan_exclusive(in.data(), want.data(), n);
    EXPECT_EQ(dex.download(), want) << "n=" << n;
  }
}

// Through cuLibraryLoadData / cuLibraryGetKernel / cuKernelGetFunction.
TEST_F(Corpus, HistogramsThroughTheLibraryApi) {
  std::string image = read_image("histogram.fatbin");
  ASSERT_FALSE(image.empty());
  CUlibrary lib = nullptr;
  ASSERT_CU(cuLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  const int n = 20000;
  auto in = random_vector<unsigned char>(n, 0, 255, 12);
  std::vector<unsigned> want(256);
  tk::histogram(in.data(), want.data(), n);
  DeviceBuffer<unsigned char> din(in);
  for (const char* name : {"histogram_global", "histogram_shared"}) {
    CUkernel kernel = nullptr;
    CUfunction f = nullptr;
    ASSERT_CU(cuLibraryGetKernel(&kernel, lib, name));
    ASSERT_CU(cuKernelGetFunction(&f, kernel));
    DeviceBuffer<unsigned> bins(256);
    ASSERT_CU(cuMemsetD32(bins.ptr(), 0, 256));
    ASSERT_CU(launch(f, {16}, {192}, din.ptr(), bins.ptr(), n));
    EXPECT_EQ(bins.download(), want) << name;
  }
  CUmodule mod = nullptr;
  ASSERT_CU(cuLibraryGetModule(&mod, lib));
  CUfunction f = nullptr;
  EXPECT_CU(cuModuleGetFunction(&f, mod, "histogram_global"));
  CUkernel missing = nullptr;
  EXPECT_EQ(cuLibraryGetKernel(&missing, lib, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuLibraryUnload(lib));
}

TEST_F(Corpus, TransposeNaiveAndTiled) {
  Module m("transpose.fatbin");
  ASSERT_TRUE(m.ok());
  const int rows = 70, cols = 45;
  auto in = random_vector<float>(rows * cols, -5, 5, 13);
  std::vector<float> want(rows * cols);
  tk::transpose(in.data(), want.data(), rows, cols);
  DeviceBuffer<float> din(in), d1(rows * cols), d2(rows * cols);
  ASSERT_CU(launch(m.function("transpose_naive"), {(cols + 15) / 16, (rows + 15) / 16}, {16, 16}, din.ptr(), d1.ptr(),
                   rows, cols));
  ASSERT_CU(launch(m.function("transpose_tiled"), {(cols + 31) / 32, (rows + 31) / 32}, {32, 8}, din.ptr(), d2.ptr(),
                   rows, cols));
  EXPECT_EQ(d1.download(), want);
  EXPECT_EQ(d2.download(), want);
}

TEST_F(Corpus, Stencil1D) {
  Module m("stencil.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 1000;
  auto in = random_vector<float>(n, -1, 1, 14);
  std::vector<float> want(n);
  DeviceBuffer<float> din(in), dout(n);
  ASSERT_CU(launch(m.function("stencil_1d"), {(n + 127) / 128}, {128}, din.ptr(), dout.ptr(), n));
  tk::stencil_1d(in.data(), want.data(), n);
  EXPECT_TRUE(near_all(dout.download(), want, 1e-5, 1e-5));
}

TEST_F(Corpus, DynamicSharedMemory) {
  Module m("dynamic_shared.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 1000, block = 128;
  auto data = random_vector<int>(n, 0, 1 << 20, 15);
  std::vector<int> want = data;
  DeviceBuffer<int> d(data);
  ASSERT_CU(launch_on(nullptr, m.function("reverse_dynamic"), {(n + block - 1) / block}, {block},
                      block * sizeof(int), d.ptr(), n));
  tk::reverse_dynamic(want.data(), n, block);
  EXPECT_EQ(d.download(), want);
}

}  // namespace
}  // namespace rgpu::e2e
