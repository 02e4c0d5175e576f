// Tests of modules and kernels: loading nvcc's fatbin and PTX, globals and
// constants, launches with kernelParams and extra, shared memory, faults.
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <thread>
#include <vector>

#include "cuda_lib.h"
#include "gate.h"

namespace rgpu::cpudev::test {
namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  data.push_back('\0');  // PTX text is passed NUL-terminated
  return data;
}

class CpuDeviceModule : public CpuDeviceTest {
 protected:
  void SetUp() override {
    CpuDeviceTest::SetUp();
    fatbin_ = read_file(RGPU_CPUDEV_TEST_FATBIN);
    ptx_ = read_file(RGPU_CPUDEV_TEST_PTX);
    ASSERT_GT(fatbin_.size(), 16u);
    ASSERT_GT(ptx_.size(), 16u);
    CU_OK(cu.cuModuleLoadData(&mod_, fatbin_.data()));
  }
  CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuModuleGetFunction(&f, mod_, name));
    return f;
  }
  std::vector<char> fatbin_, ptx_;
  CUmodule mod_ = nullptr;
};

TEST_F(CpuDeviceModule, VecAddFromFatbin) {
  const int n = 1000;
  std::vector<float> a(n), b(n), c(n, -1);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i);
  }
  CUdeviceptr da, db, dc;
  CU_OK(cu.cuMemAlloc(&da, n * 4));
  CU_OK(cu.cuMemAlloc(&db, n * 4));
  CU_OK(cu.cuMemAlloc(&dc, n * 4));
  CU_OK(cu.cuMemcpyHtoD(da, a.data(), n * 4));
  CU_OK(cu.cuMemcpyHtoD(db, b.data(), n * 4));
  int count = n;
  void* args[] = {&da, &db, &dc, &count};
  CUfunction f = fn("vec_add");
  CU_OK(cu.cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cu.cuMemcpyDtoH(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i) ASSERT_EQ(3.0f * i, c[i]) << i;
  // The same kernel through the extra buffer (pointers at 0, 8, 16; int at 24).
  std::vector<float> zeros(n, 0);
  CU_OK(cu.cuMemcpyHtoD(dc, zeros.data(), n * 4));
  unsigned char buf[32] = {};
  std::memcpy(buf + 0, &db, 8);
  std::memcpy(buf + 8, &db, 8);
  std::memcpy(buf + 16, &dc, 8);
  std::memcpy(buf + 24, &count, 4);
  size_t size = 28;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CU_OK(cu.cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra));
  CU_OK(cu.cuMemcpyDtoH(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i) ASSERT_EQ(4.0f * i, c[i]) << i;
  // cuLaunchKernelEx with a configuration, hints included.
  CUlaunchAttribute hint{};
  hint.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  hint.value.priority = 0;
  CUlaunchConfig config{};
  config.gridDimX = (n + 63) / 64;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 64;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &hint;
  config.numAttrs = 1;
  CU_OK(cu.cuLaunchKernelEx(&config, f, args, nullptr));  // c = a + b again
  CU_OK(cu.cuMemcpyDtoH(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i) ASSERT_EQ(3.0f * i, c[i]) << i;
  // A programmatic dependent launch (CUB's merge sort asks for one): run
  // after the previous kernel of the stream, one of the orders it allows.
  CU_OK(cu.cuMemsetD32(dc, 0, n));
  hint.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  hint.value.programmaticStreamSerializationAllowed = 1;
  CU_OK(cu.cuLaunchKernelEx(&config, f, args, nullptr));
  CU_OK(cu.cuMemcpyDtoH(c.data(), dc, n * 4));
  for (int i = 0; i < n; ++i) ASSERT_EQ(3.0f * i, c[i]) << i;
  hint.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernelEx(&config, f, args, nullptr));
  hint.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;  // an event it would record: not yet
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernelEx(&config, f, args, nullptr));
  size = 8;  // too small for the kernel's parameters
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, extra));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 1 << 20, nullptr, args, nullptr));
  CU_OK(cu.cuModuleUnload(mod_));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuModuleUnload(mod_));
  for (CUdeviceptr p : {da, db, dc}) CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceModule, SharedMemoryFromPtxText) {
  CUmodule m;
  CUjit_option opt = CU_JIT_MAX_REGISTERS;
  void* val = reinterpret_cast<void*>(static_cast<uintptr_t>(64));
  CU_OK(cu.cuModuleLoadDataEx(&m, ptx_.data(), 1, &opt, &val));
  CUfunction sum, rev;
  CU_OK(cu.cuModuleGetFunction(&sum, m, "block_sum"));
  CU_OK(cu.cuModuleGetFunction(&rev, m, "reverse_dynamic"));
  const int blocks = 8, threads = 256;
  std::vector<int> in(blocks * threads);
  std::iota(in.begin(), in.end(), 0);
  CUdeviceptr din, dout;
  CU_OK(cu.cuMemAlloc(&din, in.size() * 4));
  CU_OK(cu.cuMemAlloc(&dout, blocks * 4));
  CU_OK(cu.cuMemcpyHtoD(din, in.data(), in.size() * 4));
  void* args[] = {&din, &dout};
  CU_OK(cu.cuLaunchKernel(sum, blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
  std::vector<int> out(blocks);
  CU_OK(cu.cuMemcpyDtoH(out.data(), dout, blocks * 4));
  for (int b = 0; b < blocks; ++b) {
    int expect = 0;
    for (int t = 0; t < threads; ++t) expect += b * threads + t;
    EXPECT_EQ(expect, out[b]) << b;
  }
  int attr = 0;
  CU_OK(cu.cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, sum));
  EXPECT_EQ(1024, attr);

  void* rargs[] = {&din};
  CU_OK(cu.cuLaunchKernel(rev, blocks, 1, 1, threads, 1, 1, threads * 4, nullptr, rargs, nullptr));
  std::vector<int> r(in.size());
  CU_OK(cu.cuMemcpyDtoH(r.data(), din, r.size() * 4));
  EXPECT_EQ(255, r[0]);
  EXPECT_EQ(0, r[255]);
  EXPECT_EQ(256 + 255, r[256]);
  // More dynamic shared memory than allowed by default, then opted in.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(rev, 1, 1, 1, 1, 1, 1, 64 * 1024, nullptr, rargs, nullptr));
  CU_OK(cu.cuFuncSetAttribute(rev, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
  CU_OK(cu.cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, rev));
  EXPECT_EQ(64 * 1024, attr);
  CU_OK(cu.cuLaunchKernel(rev, 1, 1, 1, 1, 1, 1, 64 * 1024, nullptr, rargs, nullptr));
  CU_OK(cu.cuCtxSynchronize());
  CU_OK(cu.cuMemFree(din));
  CU_OK(cu.cuMemFree(dout));
  CU_OK(cu.cuModuleUnload(m));
}

TEST_F(CpuDeviceModule, GlobalsAndConstants) {
  CUdeviceptr counter = 0, scale = 0;
  size_t bytes = 0;
  CU_OK(cu.cuModuleGetGlobal(&counter, &bytes, mod_, "g_counter"));
  EXPECT_EQ(4u, bytes);
  CU_OK(cu.cuModuleGetGlobal(&scale, &bytes, mod_, "c_scale"));
  EXPECT_EQ(16u, bytes);
  CU_OK(cu.cuModuleGetGlobal(nullptr, &bytes, mod_, "c_scale"));
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cu.cuModuleGetGlobal(&scale, &bytes, mod_, "nope"));
  int v = 0;
  CU_OK(cu.cuMemcpyDtoH(&v, counter, 4));
  EXPECT_EQ(5, v);
  float sc[4];
  CU_OK(cu.cuMemcpyDtoH(sc, scale, 16));
  EXPECT_EQ(3.0f, sc[2]);

  CUdeviceptr x;
  std::vector<float> h(64, 2.0f);
  CU_OK(cu.cuMemAlloc(&x, 64 * 4));
  CU_OK(cu.cuMemcpyHtoD(x, h.data(), 64 * 4));
  int n = 64, which = 2;
  void* args[] = {&x, &n, &which};
  CUfunction f = fn("scale_and_count");
  CU_OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  float nine = 9.0f;
  CU_OK(cu.cuMemcpyHtoD(scale + 8, &nine, 4));  // constant memory is written from the host
  CU_OK(cu.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cu.cuMemcpyDtoH(h.data(), x, 64 * 4));
  EXPECT_EQ(54.0f, h[0]);
  EXPECT_EQ(54.0f, h[63]);
  CU_OK(cu.cuMemcpyDtoH(&v, counter, 4));
  EXPECT_EQ(7, v);
  // A second load of the same image has its own globals.
  CUmodule m2;
  CU_OK(cu.cuModuleLoadFatBinary(&m2, fatbin_.data()));
  CUdeviceptr counter2 = 0;
  CU_OK(cu.cuModuleGetGlobal(&counter2, nullptr, m2, "g_counter"));
  EXPECT_NE(counter, counter2);
  CU_OK(cu.cuMemcpyDtoH(&v, counter2, 4));
  EXPECT_EQ(5, v);
  // Unloading frees the module's variables.
  size_t before = 0, after = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&before, &total));
  CU_OK(cu.cuModuleUnload(m2));
  CU_OK(cu.cuMemGetInfo(&after, &total));
  EXPECT_GT(after, before);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(&v, counter2, 4));
  CU_OK(cu.cuMemFree(x));
}

TEST_F(CpuDeviceModule, IllegalAddressIsStickyForItsContextOnly) {
  CUfunction poke = fn("poke");
  CUdeviceptr p;
  CU_OK(cu.cuMemAlloc(&p, 16));
  long long ok_offset = 3;
  void* args_ok[] = {&p, &ok_offset};
  CU_OK(cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, nullptr, args_ok, nullptr));
  int v[4] = {};
  CU_OK(cu.cuMemcpyDtoH(v, p, 16));
  EXPECT_EQ(42, v[3]);
  long long bad_offset = 1 << 20;  // 4 MiB past a 16 byte allocation
  void* args_bad[] = {&p, &bad_offset};
  CU_OK(cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, nullptr, args_bad, nullptr));  // asynchronous
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());  // sticky
  CUdeviceptr q;
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuMemAlloc(&q, 16));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuMemcpyDtoH(v, p, 16));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, nullptr, args_ok, nullptr));

  // Another context is unaffected.
  CUcontext other;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CUmodule m2;
  CU_OK(cu.cuModuleLoadData(&m2, fatbin_.data()));
  CUfunction poke2;
  CU_OK(cu.cuModuleGetFunction(&poke2, m2, "poke"));
  CUdeviceptr p2;
  CU_OK(cu.cuMemAlloc(&p2, 16));
  void* args2[] = {&p2, &ok_offset};
  CU_OK(cu.cuLaunchKernel(poke2, 1, 1, 1, 1, 1, 1, 0, nullptr, args2, nullptr));
  CU_OK(cu.cuCtxSynchronize());
  CU_OK(cu.cuMemcpyDtoH(v, p2, 16));
  EXPECT_EQ(42, v[3]);
  CU_OK(cu.cuCtxDestroy(other));
  // The faulted context can still be destroyed (TearDown) and replaced.
}

TEST_F(CpuDeviceModule, AccessToFreedMemoryIsIllegal) {
  CUfunction poke = fn("poke");
  CUdeviceptr p;
  CU_OK(cu.cuMemAlloc(&p, 64));
  CU_OK(cu.cuMemFree(p));
  long long zero = 0;
  void* args[] = {&p, &zero};
  CU_OK(cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());
}

// thrust::sort frees its temporary storage right after launching the
// kernels that use it, then synchronizes: the free waits for them, as on a
// GPU, instead of leaving them an illegal address.
TEST_F(CpuDeviceModule, FreeWaitsForQueuedKernels) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out;
  CU_OK(cu.cuMemAlloc(&out, 4));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  int iters = 1000;
  void* args[] = {&out, &iters};
  CU_OK(cu.cuLaunchKernel(fn("spin"), 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
  EXPECT_TRUE(gate.call_waits_for_opening([&] { CU_OK(cu.cuMemFree(out)); }));
  CU_OK(cu.cuStreamSynchronize(s));
  CU_OK(cu.cuCtxSynchronize());
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceModule, KernelsKeepStreamOrder) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out;
  CU_OK(cu.cuMemAlloc(&out, 4));
  CU_OK(cu.cuMemsetD32Async(out, 0xffffffffu, 1, s));
  int iters = 20000;
  void* args[] = {&out, &iters};
  CU_OK(cu.cuLaunchKernel(fn("spin"), 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
  int got = -1;
  CU_OK(cu.cuMemcpyDtoHAsync(&got, out, 4, s));
  CU_OK(cu.cuStreamSynchronize(s));
  int expect = 0;
  for (int i = 0; i < iters; ++i) expect += i ^ 0;
  EXPECT_EQ(expect, got);
  CU_OK(cu.cuStreamDestroy(s));
  CU_OK(cu.cuMemFree(out));
}

TEST_F(CpuDeviceModule, ConcurrentLaunchesOnManyStreams) {
  constexpr int kStreams = 4;
  const int n = 64 * 64;
  CUfunction f = fn("vec_add");
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1.0f;
  }
  CUdeviceptr da, db;
  CU_OK(cu.cuMemAlloc(&da, n * 4));
  CU_OK(cu.cuMemAlloc(&db, n * 4));
  CU_OK(cu.cuMemcpyHtoD(da, a.data(), n * 4));
  CU_OK(cu.cuMemcpyHtoD(db, b.data(), n * 4));
  CUstream s[kStreams];
  CUdeviceptr dc[kStreams];
  std::vector<std::vector<float>> out(kStreams, std::vector<float>(n, 0));
  int count = n;
  for (int k = 0; k < kStreams; ++k) {
    CU_OK(cu.cuStreamCreate(&s[k], CU_STREAM_NON_BLOCKING));
    CU_OK(cu.cuMemAlloc(&dc[k], n * 4));
    void* args[] = {&da, &db, &dc[k], &count};  // copied at launch
    CU_OK(cu.cuLaunchKernel(f, 64, 1, 1, 64, 1, 1, 0, s[k], args, nullptr));
    CU_OK(cu.cuMemcpyDtoHAsync(out[k].data(), dc[k], n * 4, s[k]));
  }
  for (int k = 0; k < kStreams; ++k) {
    CU_OK(cu.cuStreamSynchronize(s[k]));
    for (int i = 0; i < n; ++i) ASSERT_EQ(i + 1.0f, out[k][i]) << k << " " << i;
    CU_OK(cu.cuStreamDestroy(s[k]));
    CU_OK(cu.cuMemFree(dc[k]));
  }
  CU_OK(cu.cuMemFree(da));
  CU_OK(cu.cuMemFree(db));
}

TEST_F(CpuDeviceModule, DestroyingAContextStopsItsRunningKernel) {
  CUcontext other;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, fatbin_.data()));
  CUfunction spin;
  CU_OK(cu.cuModuleGetFunction(&spin, m, "spin"));
  CUdeviceptr out;
  CU_OK(cu.cuMemAlloc(&out, 4));
  int forever = 2000000000;  // far longer than any test may take
  void* args[] = {&out, &forever};
  CU_OK(cu.cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(nullptr));
  auto t0 = std::chrono::steady_clock::now();
  CU_OK(cu.cuCtxDestroy(other));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(CpuDeviceModule, FunctionAttributesAndLookups) {
  CUfunction f = fn("vec_add");
  CUfunction again = fn("vec_add");
  EXPECT_EQ(f, again);
  int v = -1;
  CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  EXPECT_EQ(1024, v);
  CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
  EXPECT_GE(v, 60);
  CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
  EXPECT_EQ(80, v);
  CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  EXPECT_EQ(0, v);
  CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, f));
  EXPECT_EQ(16, v);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, f));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuFuncGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE,
            cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, reinterpret_cast<CUfunction>(0x77)));
  CUfunction none;
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cu.cuModuleGetFunction(&none, mod_, "missing_kernel"));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuModuleGetFunction(nullptr, mod_, "vec_add"));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuModuleGetFunction(&none, reinterpret_cast<CUmodule>(0x55), "vec_add"));
}

// CUB's host code picks its tuning policy from cudaFuncGetAttributes'
// ptxVersion (cub::PtxVersion) and its device code was compiled with the
// policy of the PTX's architecture: the attribute must be the .target
// (compute_90 -> 90), not the ISA's .version (8.4 -> 84, which made CUB launch
// compute_90 kernels with sm_80 block and tile sizes).
TEST_F(CpuDeviceModule, PtxVersionIsTheTargetArchitecture) {
  struct Case {
    const char* target;
    int expected;
  };
  for (Case c : {Case{"sm_90", 90}, Case{"sm_90a", 90}, Case{"sm_75", 75}, Case{"sm_100", 100}}) {
    std::string ptx = std::string(".version 8.4\n.target ") + c.target +
                      "\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
    CUmodule m;
    CU_OK(cu.cuModuleLoadData(&m, ptx.c_str()));
    CUfunction f;
    CU_OK(cu.cuModuleGetFunction(&f, m, "k"));
    int v = -1;
    CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
    EXPECT_EQ(c.expected, v) << c.target;
    CU_OK(cu.cuModuleUnload(m));
  }
}

// PTX declares virtual registers by the thousand; the interpreter has no
// register file to run out of. Occupancy calculators (CUB's radix sort sizes
// its histogram grid with cudaOccupancyMaxActiveBlocksPerMultiprocessor)
// divide the multiprocessor's registers by NUM_REGS x threads: the attribute
// must leave a 1024-thread block room for two blocks per multiprocessor.
TEST_F(CpuDeviceModule, RegisterCountNeverLimitsOccupancy) {
  const char ptx[] =
      ".version 8.4\n.target sm_90\n.address_size 64\n"
      ".visible .entry many(.param .u64 p)\n{\n.reg .b32 %r<3000>;\n.reg .b64 %rd<2>;\n"
      "ld.param.u64 %rd1, [p];\nmov.u32 %r2999, 7;\nst.global.u32 [%rd1], %r2999;\nret;\n}\n";
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, ptx));
  CUfunction f;
  CU_OK(cu.cuModuleGetFunction(&f, m, "many"));
  int regs = -1, regs_sm = -1, threads_sm = -1;
  CU_OK(cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  CU_OK(cu.cuDeviceGetAttribute(&regs_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 0));
  CU_OK(cu.cuDeviceGetAttribute(&threads_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
  EXPECT_GT(regs, 0);
  EXPECT_LE(regs * threads_sm, regs_sm);
  CU_OK(cu.cuModuleUnload(m));
}

TEST_F(CpuDeviceModule, BadImages) {
  CUmodule m;
  const char junk[] = "this is not a module";
  EXPECT_EQ(CUDA_ERROR_INVALID_IMAGE, cu.cuModuleLoadData(&m, junk));
  const char bad_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k( { garbage";
  CUresult r = cu.cuModuleLoadData(&m, bad_ptx);
  EXPECT_EQ(CUDA_ERROR_INVALID_PTX, r);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuModuleLoadData(&m, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuModuleLoadData(nullptr, fatbin_.data()));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuModuleLoadDataEx(&m, fatbin_.data(), 2, nullptr, nullptr));
}

TEST_F(CpuDeviceModule, ContextDestroyReleasesModules) {
  size_t free0 = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free0, &total));
  CUcontext other;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, fatbin_.data()));
  CUfunction f;
  CU_OK(cu.cuModuleGetFunction(&f, m, "vec_add"));
  CU_OK(cu.cuCtxDestroy(other));
  size_t free1 = 0;
  CU_OK(cu.cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0, free1);
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuModuleUnload(m));
  int v;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
}

}  // namespace
}  // namespace rgpu::cpudev::test
