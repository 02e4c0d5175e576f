// Kernel features through rgpu beyond plain launches: device printf reaching
// the program's stdout, module variables set with cuModuleGetGlobal, host
// functions in stream order, function attributes, parameter layouts,
// occupancy, and every way of loading an image.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "kernels_e2e.h"
#include "reference.h"

namespace rgpu::e2e {
namespace {
namespace tk = rgpu::testkernels;
using Clock = std::chrono::steady_clock;

class Features : public KernelTest {};

// Redirects file descriptor 1 into a pipe while alive; text() reads what
// arrived. Not thread-safe; one at a time.
class StdoutCapture {
 public:
  StdoutCapture() {
    std::fflush(stdout);
    if (pipe(fds_) != 0) return;
    fcntl(fds_[0], F_SETFL, O_NONBLOCK);
    saved_ = dup(1);
    dup2(fds_[1], 1);
  }
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;
  ~StdoutCapture() {
    restore();
    if (fds_[0] >= 0) close(fds_[0]);
  }
  bool ok() const { return saved_ >= 0; }
  // Reads until `lines` newlines have arrived or `limit` has passed.
  std::string read_lines(size_t lines, std::chrono::milliseconds limit) {
    std::fflush(stdout);
    auto deadline = Clock::now() + limit;
    while (std::count(text_.begin(), text_.end(), '\n') < static_cast<long>(lines) && Clock::now() < deadline) {
      pollfd p{fds_[0], POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      char buf[1024];
      ssize_t n = read(fds_[0], buf, sizeof buf);
      if (n > 0) text_.append(buf, static_cast<size_t>(n));
    }
    return text_;
  }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stdout);
    dup2(saved_, 1);
    close(saved_);
    close(fds_[1]);
    saved_ = -1;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
  std::string text_;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t at; (at = text.find('\n', start)) != std::string::npos; start = at + 1)
    lines.push_back(text.substr(start, at - start + 1));
  return lines;
}

TEST_F(Features, DevicePrintfReachesStdout) {
  Module m("printf.fatbin");
  ASSERT_TRUE(m.ok());
  CUfunction f = m.function("hello_printf");
  const std::vector<std::string> want = tk::hello_printf_lines(42, 2, 64);
  std::string text;
  CUresult launched, synced;
  {
    StdoutCapture capture;
    ASSERT_TRUE(capture.ok());
    std::printf("capture works\n");  // proves the capture itself
    launched = launch(f, {2}, {64}, 42);
    synced = cuCtxSynchronize();
    text = capture.read_lines(want.size() + 1, std::chrono::milliseconds(1500));
  }
  ASSERT_EQ(launched, CUDA_SUCCESS);
  ASSERT_EQ(synced, CUDA_SUCCESS);
  ASSERT_NE(text.find("capture works\n"), std::string::npos) << text;
  auto lines = split_lines(text);
  std::vector<std::string> printed;
  for (const auto& l : lines)
    if (l.rfind("tag=", 0) == 0) printed.push_back(l);
  std::sort(printed.begin(), printed.end());
  EXPECT_EQ(printed, want) << "captured stdout:\n" << text;
}

// __constant__ and __device__ variables found by name, written with
// cuMemcpyHtoD and read back, in each kind of image.
TEST_F(Features, ModuleVariablesThroughGetGlobal) {
  for (const char* image : {"globals.fatbin", "globals.ptx", "globals.z.fatbin"}) {
    SCOPED_TRACE(image);
    Module m(image);
    ASSERT_TRUE(m.ok());
    CUdeviceptr poly = 0, offsets = 0, launches = 0;
    size_t bytes = 0;
    ASSERT_CU(cuModuleGetGlobal(&poly, &bytes, m.get(), "poly"));
    EXPECT_EQ(bytes, 4 * sizeof(float));
    ASSERT_CU(cuModuleGetGlobal(&offsets, &bytes, m.get(), "offsets"));
    EXPECT_EQ(bytes, 8 * sizeof(int));
    ASSERT_CU(cuModuleGetGlobal(&launches, nullptr, m.get(), "launches"));
    CUdeviceptr none = 0;
    EXPECT_EQ(cuModuleGetGlobal(&none, &bytes, m.get(), "no_such_variable"), CUDA_ERROR_NOT_FOUND);

    std::vector<int> offs(8, -1);
    ASSERT_CU(cuMemcpyDtoH(offs.data(), offsets, offs.size() * sizeof(int)));
    EXPECT_EQ(offs, (std::vector<int>{0, 10, 20, 30, 40, 50, 60, 70}));  // the initializer
    offs[3] = -300;
    ASSERT_CU(cuMemcpyHtoD(offsets, offs.data(), offs.size() * sizeof(int)));
    const float c[4] = {0.5f, -1.f, 0.25f, 2.f};
    ASSERT_CU(cuMemcpyHtoD(poly, c, sizeof c));
    ASSERT_CU(cuMemsetD32(launches, 0, 1));

    const int n = 300;
    auto in = random_vector<float>(n, -2, 2, 41);
    DeviceBuffer<float> din(in), dout(n);
    CUfunction f = m.function("apply_globals");
    ASSERT_CU(launch(f, {3}, {128}, din.ptr(), dout.ptr(), n));
    ASSERT_CU(launch(f, {3}, {128}, din.ptr(), dout.ptr(), n));
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) {
      float x = in[i];
      want[i] = ((c[3] * x + c[2]) * x + c[1]) * x + c[0] + static_cast<float>(offs[i & 7]);
    }
    EXPECT_TRUE(near_all(dout.download(), want, 1e-6, 1e-6));
    unsigned count = 0;
    ASSERT_CU(cuMemcpyDtoH(&count, launches, sizeof count));
    EXPECT_EQ(count, 2u);
  }
}

// What the host functions of one test saw and did; the atomics are shared
// between the test thread and the thread that runs host functions.
struct HostFuncState {
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  std::atomic<bool> released_in_time{false};
  std::vector<int> order;  // written by host functions only, in stream order
};

void CUDA_CB hold_until_released(void* arg) {
  auto* st = static_cast<HostFuncState*>(arg);
  st->order.push_back(1);
  st->started.store(1);
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!st->release.load() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  st->released_in_time.store(st->release.load());
}

void CUDA_CB record_two(void* arg) { static_cast<HostFuncState*>(arg)->order.push_back(2); }

// kernel, host function, kernel on one stream: the host function runs after
// the first kernel and holds the second until it returns.
TEST_F(Features, HostFunctionRunsBetweenTwoKernels) {
  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  CUfunction add = m.function("vec_add");
  const int n = 512;
  auto a = random_vector<float>(n, -1, 1, 42), b = random_vector<float>(n, -1, 1, 43);
  DeviceBuffer<float> da(a), db(b), d1(n), d2(n);
  ASSERT_CU(cuMemsetD32(d1.ptr(), 0, n));
  ASSERT_CU(cuMemsetD32(d2.ptr(), 0, n));
  CUstream s, other;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  // Static: should a check below fail early, the held host function may
  // still run later, and must find its state.
  static HostFuncState st;
  st.started.store(0);
  st.release.store(false);
  st.order.clear();
  struct ReleaseOnExit {
    ~ReleaseOnExit() { st.release.store(true); }
  } release_on_exit;
  ASSERT_CU(launch_on(s, add, {4}, {128}, 0, da.ptr(), db.ptr(), d1.ptr(), n));  // d1 = a + b
  ASSERT_CU(cuLaunchHostFunc(s, hold_until_released, &st));
  ASSERT_CU(launch_on(s, add, {4}, {128}, 0, d1.ptr(), db.ptr(), d2.ptr(), n));  // d2 = d1 + b
  ASSERT_CU(cuLaunchHostFunc(s, record_two, &st));

  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!st.started.load() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(st.started.load(), 1) << "the host function did not run";
  // While it holds the stream: the first kernel is done, the second has not run.
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  std::vector<float> seen1(n, -1.f), seen2(n, -1.f);
  EXPECT_CU(cuMemcpyDtoHAsync(seen1.data(), d1.ptr(), n * sizeof(float), other));
  EXPECT_CU(cuMemcpyDtoHAsync(seen2.data(), d2.ptr(), n * sizeof(float), other));
  EXPECT_CU(cuStreamSynchronize(other));
  st.release.store(true);
  ASSERT_CU(cuStreamSynchronize(s));

  std::vector<float> want1(n), want2(n);
  tk::vec_add(a.data(), b.data(), want1.data(), n);
  tk::vec_add(want1.data(), b.data(), want2.data(), n);
  EXPECT_EQ(seen1, want1);
  EXPECT_EQ(seen2, std::vector<float>(n, 0.f));
  EXPECT_TRUE(st.released_in_time.load());
  EXPECT_EQ(st.order, (std::vector<int>{1, 2}));
  EXPECT_EQ(d2.download(), want2);
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuStreamDestroy(other));
}

TEST_F(Features, ParameterLayoutsReadFromTheImage) {
  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  CUfunction f = m.function("vec_add");
  const size_t want_offset[] = {0, 8, 16, 24}, want_size[] = {8, 8, 8, 4};
  for (size_t i = 0; i < 4; ++i) {
    size_t offset = 99, size = 99;
    ASSERT_CU(cuFuncGetParamInfo(f, i, &offset, &size));
    EXPECT_EQ(offset, want_offset[i]) << "parameter " << i;
    EXPECT_EQ(size, want_size[i]) << "parameter " << i;
  }
  size_t offset, size;
  EXPECT_EQ(cuFuncGetParamInfo(f, 4, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  CUfunction g = m.function("saxpy");  // float first: 4 bytes, then a pointer aligned to 8
  ASSERT_CU(cuFuncGetParamInfo(g, 1, &offset, &size));
  EXPECT_EQ(offset, 8u);
  EXPECT_EQ(size, 8u);
}

TEST_F(Features, FunctionAttributesAndOccupancy) {
  Module m("matmul.fatbin");
  ASSERT_TRUE(m.ok());
  CUfunction tiled = m.function("matmul_tiled");
  int shared = -1, max_threads = -1, sm_threads = 0, sms = 0;
  ASSERT_CU(cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, tiled));
  EXPECT_EQ(shared, 2 * 16 * 16 * 4);
  ASSERT_CU(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, tiled));
  EXPECT_GE(max_threads, 256);
  EXPECT_LE(max_threads, 1024);
  ASSERT_CU(cuDeviceGetAttribute(&sm_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev_));
  ASSERT_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_));

  int blocks = -1;
  ASSERT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiled, 256, 0));
  EXPECT_GE(blocks, 1);
  EXPECT_LE(blocks * 256, sm_threads);
  int small = -1;
  ASSERT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&small, tiled, 32, 0));
  EXPECT_GE(small, blocks);  // smaller blocks: at least as many fit
  int none = -1;
  ASSERT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&none, tiled, 256, size_t{1} << 30));
  EXPECT_EQ(none, 0);  // a gigabyte of shared memory per block fits nowhere

  int min_grid = -1, block = -1;
  ASSERT_CU(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, tiled, nullptr, 0, 0));
  EXPECT_GE(block, 32);
  EXPECT_LE(block, max_threads);
  EXPECT_EQ(block % 32, 0);
  EXPECT_GE(min_grid, sms);
  ASSERT_CU(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, tiled, nullptr, 0, 128));
  EXPECT_GE(block, 32);
  EXPECT_LE(block, 128);

  // A raised dynamic shared memory limit reads back and allows the launch.
  Module r("dynamic_shared.fatbin");
  ASSERT_TRUE(r.ok());
  CUfunction rev = r.function("reverse_dynamic");
  ASSERT_CU(cuFuncSetAttribute(rev, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
  int dyn = 0;
  ASSERT_CU(cuFuncGetAttribute(&dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, rev));
  EXPECT_EQ(dyn, 64 * 1024);
  const int n = 1024;
  auto data = random_vector<int>(n, 0, 1000, 44);
  std::vector<int> want = data;
  DeviceBuffer<int> d(data);
  ASSERT_CU(launch_on(nullptr, rev, {1}, {1024}, 64 * 1024, d.ptr(), n));
  tk::reverse_dynamic(want.data(), n, 1024);
  EXPECT_EQ(d.download(), want);
}

// cuModuleLoadDataEx and cuModuleLoadFatBinary take the same images; a second
// load of the same bytes (known to the server by hash) works as the first.
TEST_F(Features, EveryWayOfLoadingAnImage) {
  std::string fat = read_image("elementwise.fatbin"), ptx = read_image("elementwise.ptx");
  ASSERT_FALSE(fat.empty());
  ASSERT_FALSE(ptx.empty());
  const int n = 200;
  auto a = random_vector<float>(n, -1, 1, 45), b = random_vector<float>(n, -1, 1, 46);
  std::vector<float> want(n);
  tk::vec_add(a.data(), b.data(), want.data(), n);
  DeviceBuffer<float> da(a), db(b);
  for (int way = 0; way < 5; ++way) {
    SCOPED_TRACE("way " + std::to_string(way));
    CUmodule mod = nullptr;
    CUjit_option opt = CU_JIT_MAX_REGISTERS;
    void* value = reinterpret_cast<void*>(uintptr_t{64});
    switch (way) {
      case 0: ASSERT_CU(cuModuleLoadData(&mod, fat.data())); break;
      case 1: ASSERT_CU(cuModuleLoadData(&mod, fat.data())); break;  // again: the server has it
      case 2: ASSERT_CU(cuModuleLoadDataEx(&mod, fat.data(), 1, &opt, &value)); break;
      case 3: ASSERT_CU(cuModuleLoadFatBinary(&mod, fat.data())); break;
      default: ASSERT_CU(cuModuleLoadDataEx(&mod, ptx.data(), 0, nullptr, nullptr)); break;
    }
    CUfunction f = nullptr;
    ASSERT_CU(cuModuleGetFunction(&f, mod, "vec_add"));
    DeviceBuffer<float> dc(n);
    ASSERT_CU(launch(f, {2}, {128}, da.ptr(), db.ptr(), dc.ptr(), n));
    EXPECT_EQ(dc.download(), want);
    EXPECT_EQ(cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    ASSERT_CU(cuModuleUnload(mod));
  }
  CUmodule bad = nullptr;
  const char garbage[] = "this is neither a fatbin, nor an ELF, nor PTX";
  EXPECT_NE(cuModuleLoadData(&bad, garbage), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rgpu::e2e
