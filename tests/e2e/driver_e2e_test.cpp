// End to end: an ordinary program written against cuda.h, linked against
// libcuda.so.1 only, run through `rgpu run` against a real rgpud over UCX.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

class Driver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
  }
  void SetUp() override { ASSERT_CU(cuCtxSetCurrent(ctx_)); }

  static std::vector<unsigned char> pattern(size_t n, uint64_t seed) {
    std::vector<unsigned char> v(n);
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < n; i += 8) {
      uint64_t x = rng();
      std::memcpy(v.data() + i, &x, std::min<size_t>(8, n - i));
    }
    return v;
  }

  static inline CUdevice dev_ = 0;
  static inline CUcontext ctx_ = nullptr;
};

TEST_F(Driver, DeviceQueries) {
  int count = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  EXPECT_GE(count, 1);
  char name[256] = {};
  ASSERT_CU(cuDeviceGetName(name, sizeof name, dev_));
  EXPECT_GT(std::strlen(name), 0u);
  int warp = 0, major = 0, threads = 0;
  ASSERT_CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev_));
  ASSERT_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_));
  ASSERT_CU(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev_));
  EXPECT_EQ(warp, 32);
  EXPECT_GE(major, 3);
  EXPECT_GE(threads, 256);
  size_t total = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, dev_));
  EXPECT_GT(total, size_t{1} << 20);
  CUuuid a{}, zero{};
  ASSERT_CU(cuDeviceGetUuid(&a, dev_));
  EXPECT_NE(std::memcmp(a.bytes, zero.bytes, sizeof a.bytes), 0);
  int version = 0;
  ASSERT_CU(cuDriverGetVersion(&version));
  EXPECT_GE(version, 13000);

  CUdevice bad;
  EXPECT_EQ(cuDeviceGet(&bad, count), CUDA_ERROR_INVALID_DEVICE);
  int v;
  EXPECT_EQ(cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(100000), dev_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev_), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Driver, CopiesOfEverySizeKeepTheirContent) {
  const size_t sizes[] = {1, 7, 4096, 65535, 65536, 65537, 1 << 20, (16 << 20) + 3, 64 << 20};
  for (size_t n : sizes) {
    SCOPED_TRACE("size " + std::to_string(n));
    auto src = pattern(n, n);
    std::vector<unsigned char> back(n, 0), back2(n, 0);
    CUdeviceptr a, b;
    ASSERT_CU(cuMemAlloc(&a, n));
    ASSERT_CU(cuMemAlloc(&b, n));
    ASSERT_CU(cuMemcpyHtoD(a, src.data(), n));
    ASSERT_CU(cuMemcpyDtoD(b, a, n));
    ASSERT_CU(cuMemcpyDtoH(back.data(), b, n));
    EXPECT_TRUE(std::memcmp(src.data(), back.data(), n) == 0);
    // The same through a stream, asynchronously.
    CUstream s;
    ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ASSERT_CU(cuMemsetD8Async(b, 0, n, s));
    ASSERT_CU(cuMemcpyHtoDAsync(b, src.data(), n, s));
    ASSERT_CU(cuMemcpyDtoHAsync(back2.data(), b, n, s));
    ASSERT_CU(cuStreamSynchronize(s));
    EXPECT_TRUE(std::memcmp(src.data(), back2.data(), n) == 0);
    ASSERT_CU(cuStreamDestroy(s));
    ASSERT_CU(cuMemFree(a));
    ASSERT_CU(cuMemFree(b));
  }
}

TEST_F(Driver, CopiesAtOffsetsInsideAnAllocation) {
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 1 << 16));
  auto src = pattern(1000, 3);
  ASSERT_CU(cuMemsetD8(d, 0xEE, 1 << 16));
  ASSERT_CU(cuMemcpyHtoD(d + 12345, src.data(), src.size()));
  std::vector<unsigned char> back(1 << 16);
  ASSERT_CU(cuMemcpyDtoH(back.data(), d, back.size()));
  EXPECT_EQ(back[12344], 0xEE);
  EXPECT_EQ(std::memcmp(back.data() + 12345, src.data(), src.size()), 0);
  EXPECT_EQ(back[12345 + 1000], 0xEE);
  ASSERT_CU(cuMemFree(d));
}

TEST_F(Driver, Memsets) {
  const size_t n = 1 << 20;
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, n));
  std::vector<uint8_t> b8(n);
  ASSERT_CU(cuMemsetD8(d, 0x5A, n));
  ASSERT_CU(cuMemcpyDtoH(b8.data(), d, n));
  EXPECT_TRUE(std::all_of(b8.begin(), b8.end(), [](uint8_t x) { return x == 0x5A; }));
  std::vector<uint16_t> b16(n / 2);
  ASSERT_CU(cuMemsetD16(d, 0xBEEF, n / 2));
  ASSERT_CU(cuMemcpyDtoH(b16.data(), d, n));
  EXPECT_TRUE(std::all_of(b16.begin(), b16.end(), [](uint16_t x) { return x == 0xBEEF; }));
  std::vector<uint32_t> b32(n / 4);
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, 0));
  ASSERT_CU(cuMemsetD32Async(d, 0xCAFEF00D, n / 4, s));
  ASSERT_CU(cuMemsetD16Async(d, 0x1111, 2, s));
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuMemcpyDtoH(b32.data(), d, n));
  EXPECT_EQ(b32[0], 0x11111111u);
  EXPECT_TRUE(std::all_of(b32.begin() + 1, b32.end(), [](uint32_t x) { return x == 0xCAFEF00D; }));
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuMemFree(d));
}

// 2-D memsets, one call each: rows `pitch` apart, the bytes between them
// untouched; regions past the allocation or with rows longer than the pitch
// refused with nothing written.
TEST_F(Driver, TwoDimensionalMemsets) {
  const size_t pitch = 256, height = 48, size = pitch * height;
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, size));
  ASSERT_CU(cuMemsetD8(d, 0xEE, size));
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, 0));
  ASSERT_CU(cuMemsetD2D8(d, pitch, 0x11, 100, height));                       // bytes 0..99 of each row
  ASSERT_CU(cuMemsetD2D16Async(d + 104, pitch, 0x2233, 10, height, s));       // 104..123
  ASSERT_CU(cuMemsetD2D32Async(d + 128, pitch, 0x44556677u, 8, height, s));   // 128..159
  ASSERT_CU(cuMemsetD2D8Async(d + 160, pitch, 0x99, 1, height, s));           // 160
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuMemsetD2D16(d + 200, pitch, 0x8899, 4, height));                // 200..207
  ASSERT_CU(cuMemsetD2D32(d + 224, pitch, 0xAABBCCDDu, 2, height));           // 224..231
  EXPECT_EQ(cuMemsetD2D8(d, pitch, 0, pitch, height + 1), CUDA_ERROR_INVALID_VALUE);  // one row too many
  EXPECT_EQ(cuMemsetD2D8(d, 16, 0, 17, 2), CUDA_ERROR_INVALID_VALUE);                 // rows overlap
  EXPECT_EQ(cuMemsetD2D32(d + 8, pitch, 0, 64, height), CUDA_ERROR_INVALID_VALUE);     // the last row past the end
  std::vector<uint8_t> back(size);
  ASSERT_CU(cuMemcpyDtoH(back.data(), d, size));
  auto expected = [](size_t col) -> int {
    if (col < 100) return 0x11;
    if (col >= 104 && col < 124) return (col - 104) % 2 ? 0x22 : 0x33;
    if (col >= 128 && col < 160) return 0x77 - 0x11 * ((col - 128) % 4);
    if (col == 160) return 0x99;
    if (col >= 200 && col < 208) return (col - 200) % 2 ? 0x88 : 0x99;
    if (col >= 224 && col < 232) return 0xDD - 0x11 * ((col - 224) % 4);
    return 0xEE;
  };
  size_t wrong = 0;
  for (size_t r = 0; r < height; ++r) {
    for (size_t c = 0; c < pitch; ++c) wrong += back[r * pitch + c] != expected(c);
  }
  EXPECT_EQ(wrong, 0u) << "row 0: " << int(back[0]) << " " << int(back[104]) << " " << int(back[128]);
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuMemFree(d));
}

TEST_F(Driver, MemoryAccounting) {
  size_t free0, total0, free1, total1;
  ASSERT_CU(cuMemGetInfo(&free0, &total0));
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 64 << 20));
  ASSERT_CU(cuMemGetInfo(&free1, &total1));
  EXPECT_EQ(total0, total1);
  EXPECT_LE(free1 + (64 << 20), free0 + (1 << 20));  // allow other users' noise of up to 1 MiB
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &size, d + 100));
  EXPECT_EQ(base, d);
  EXPECT_EQ(size, size_t{64} << 20);
  ASSERT_CU(cuMemFree(d));
}

TEST_F(Driver, StreamsAndEvents) {
  CUstream s1, s2;
  ASSERT_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, 0));
  CUevent start, stop, mid;
  ASSERT_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  ASSERT_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  ASSERT_CU(cuEventCreate(&mid, CU_EVENT_DISABLE_TIMING));
  const size_t n = 8 << 20;
  CUdeviceptr a, b;
  ASSERT_CU(cuMemAlloc(&a, n));
  ASSERT_CU(cuMemAlloc(&b, n));
  auto src = pattern(n, 11);
  std::vector<unsigned char> back(n);
  ASSERT_CU(cuEventRecord(start, s1));
  ASSERT_CU(cuMemcpyHtoDAsync(a, src.data(), n, s1));
  ASSERT_CU(cuEventRecord(mid, s1));
  // s2 must see s1's copy: it waits for `mid`.
  ASSERT_CU(cuStreamWaitEvent(s2, mid, 0));
  ASSERT_CU(cuMemcpyDtoDAsync(b, a, n, s2));
  ASSERT_CU(cuMemcpyDtoHAsync(back.data(), b, n, s2));
  ASSERT_CU(cuEventRecord(stop, s2));
  ASSERT_CU(cuEventSynchronize(stop));
  EXPECT_EQ(cuEventQuery(stop), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(s2), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(src.data(), back.data(), n), 0);
  float ms = -1;
  ASSERT_CU(cuEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cuEventElapsedTime(&ms, start, mid), CUDA_ERROR_INVALID_HANDLE);  // timing disabled on `mid`
  for (CUevent e : {start, stop, mid}) ASSERT_CU(cuEventDestroy(e));
  ASSERT_CU(cuStreamDestroy(s1));
  ASSERT_CU(cuStreamDestroy(s2));
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemFree(b));
}

TEST_F(Driver, ErrorCases) {
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 4096));
  char buf[64] = {};
  // Outside any allocation, and running off the end of one.
  EXPECT_EQ(cuMemcpyHtoD(0x10, buf, 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD(d + 4090, buf, 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoH(buf, d + 4096, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32(d, 0, 1025), CUDA_ERROR_INVALID_VALUE);
  // Double free, and freeing an interior pointer.
  EXPECT_EQ(cuMemFree(d + 16), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(d));
  EXPECT_EQ(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  // A freed stream and a freed event.
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, 0));
  ASSERT_CU(cuStreamDestroy(s));
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemsetD8Async(d, 0, 1, s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  CUevent e;
  ASSERT_CU(cuEventCreate(&e, 0));
  ASSERT_CU(cuEventDestroy(e));
  EXPECT_EQ(cuEventRecord(e, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventSynchronize(e), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
}

// An async call's error is reported at the next synchronizing call (a wait,
// a query, a synchronous copy or memset, a free), once.
TEST_F(Driver, AsyncErrorsSurfaceAtTheNextSync) {
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 256));
  ASSERT_CU(cuMemFree(d));
  EXPECT_EQ(cuMemsetD8Async(d, 1, 256, s), CUDA_SUCCESS);  // queued, not yet checked
  // Calls that reach the server but do not synchronize (an allocation, a
  // query) leave the error for one that does: a program may ignore theirs.
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  CUdeviceptr other;
  EXPECT_EQ(cuMemAlloc(&other, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_CU(cuMemFree(other));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(Driver, OwnContextsFreeTheirMemoryWhenDestroyed) {
  size_t free0, total, free1;
  ASSERT_CU(cuMemGetInfo(&free0, &total));
  CUcontext mine;
  ASSERT_CU(cuCtxCreate(&mine, nullptr, 0, dev_));
  CUcontext cur = nullptr;
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, mine);
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 32 << 20));
  ASSERT_CU(cuCtxDestroy(mine));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_GE(free1 + (1 << 20), free0);
  EXPECT_EQ(cuCtxSetCurrent(mine), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_CU(cuCtxSetCurrent(nullptr));
  EXPECT_EQ(cuMemAlloc(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_CU(cuCtxSetCurrent(ctx_));
  ASSERT_CU(cuCtxSynchronize());
}

TEST_F(Driver, ThreadsWithTheirOwnStreams) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
      CUstream s;
      CUdeviceptr d;
      const size_t n = (1 << 20) + t;
      if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS || cuMemAlloc(&d, n) != CUDA_SUCCESS) return;
      int good = 1;
      for (int i = 0; i < 20; ++i) {
        auto src = pattern(n, t * 100 + i);
        std::vector<unsigned char> back(n);
        good &= cuMemcpyHtoDAsync(d, src.data(), n, s) == CUDA_SUCCESS;
        good &= cuMemcpyDtoHAsync(back.data(), d, n, s) == CUDA_SUCCESS;
        good &= cuStreamSynchronize(s) == CUDA_SUCCESS;
        good &= std::memcmp(src.data(), back.data(), n) == 0;
      }
      good &= cuMemFree(d) == CUDA_SUCCESS && cuStreamDestroy(s) == CUDA_SUCCESS;
      ok[t] = good;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
}

TEST_F(Driver, PageLockedHostMemory) {
  const size_t sizes[] = {1, 4096, 1 << 20, (8 << 20) + 5};
  for (size_t n : sizes) {
    SCOPED_TRACE("size " + std::to_string(n));
    void* pinned = nullptr;
    ASSERT_CU(cuMemHostAlloc(&pinned, n, CU_MEMHOSTALLOC_PORTABLE));
    ASSERT_NE(pinned, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned) % 4096, 0u);
    unsigned flags = 0;
    ASSERT_CU(cuMemHostGetFlags(&flags, static_cast<char*>(pinned) + n - 1));
    EXPECT_EQ(flags, static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE));
    auto src = pattern(n, n + 1);
    std::memcpy(pinned, src.data(), n);
    CUdeviceptr d;
    ASSERT_CU(cuMemAlloc(&d, n));
    ASSERT_CU(cuMemcpyHtoD(d, pinned, n));
    std::memset(pinned, 0, n);
    ASSERT_CU(cuMemcpyDtoH(pinned, d, n));
    EXPECT_EQ(std::memcmp(pinned, src.data(), n), 0);
    // Async through a stream, into the program's own memory registered.
    std::vector<unsigned char> own(n, 0);
    ASSERT_CU(cuMemHostRegister(own.data(), n, 0));
    CUstream s;
    ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ASSERT_CU(cuMemcpyDtoHAsync(own.data(), d, n, s));
    ASSERT_CU(cuStreamSynchronize(s));
    EXPECT_EQ(std::memcmp(own.data(), src.data(), n), 0);
    ASSERT_CU(cuStreamDestroy(s));
    ASSERT_CU(cuMemHostUnregister(own.data()));
    ASSERT_CU(cuMemFree(d));
    ASSERT_CU(cuMemFreeHost(pinned));
  }
  void* p = nullptr;
  ASSERT_CU(cuMemAllocHost(&p, 100));
  std::vector<char> own(8192);
  EXPECT_EQ(cuMemFreeHost(own.data()), CUDA_ERROR_INVALID_VALUE) << "freeing memory it never allocated";
  EXPECT_EQ(cuMemFreeHost(static_cast<char*>(p) + 1), CUDA_ERROR_INVALID_VALUE) << "not the start";
  EXPECT_EQ(cuMemHostRegister(p, 100, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) << "allocated, not registered";
  EXPECT_EQ(cuMemHostUnregister(own.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostAlloc(&p, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostAlloc(&p, 16, 0x80), CUDA_ERROR_INVALID_VALUE) << "unknown flag";
  ASSERT_CU(cuMemHostRegister(own.data(), own.size(), 0));
  EXPECT_EQ(cuMemHostRegister(own.data() + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_CU(cuMemHostUnregister(own.data()));
  unsigned flags;
  EXPECT_EQ(cuMemHostGetFlags(&flags, own.data()), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFreeHost(p));
}

// A failed large copy reports its own error and leaves nothing behind for
// the next synchronizing call (large copies may travel in pieces).
TEST_F(Driver, FailedLargeCopiesReportTheirOwnError) {
  const size_t n = 4u << 20;
  std::vector<unsigned char> host(n, 1);
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, n / 2));
  EXPECT_EQ(cuMemcpyHtoD(d, host.data(), n), CUDA_ERROR_INVALID_VALUE) << "copy past the allocation's end";
  EXPECT_CU(cuCtxSynchronize());
  EXPECT_EQ(cuMemcpyDtoH(host.data(), d, n), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU(cuCtxSynchronize());
  // The allocation itself still works, whole.
  auto src = pattern(n / 2, 5);
  ASSERT_CU(cuMemcpyHtoD(d, src.data(), n / 2));
  std::vector<unsigned char> back(n / 2);
  ASSERT_CU(cuMemcpyDtoH(back.data(), d, n / 2));
  EXPECT_EQ(back, src);
  ASSERT_CU(cuMemFree(d));
}

// A kernel that counts to n in one thread, then stores n: slow on purpose.
const char kSpinPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n) {
  .reg .u32 %r<3>;
  .reg .u64 %rd<2>;
  .reg .pred %p;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
LOOP:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p, %r2, %r1;
  @%p bra LOOP;
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

// One thread's synchronous copies that wait behind a long kernel do not hold
// up another thread's calls (the server answers them when the stream gets
// there, and goes on meanwhile); the copies still see the kernel's result.
TEST_F(Driver, CopiesWaitingForAKernelDoNotHoldUpOtherThreads) {
  CUmodule module;
  CUfunction spin;
  ASSERT_CU(cuModuleLoadData(&module, kSpinPtx));
  ASSERT_CU(cuModuleGetFunction(&spin, module, "spin"));
  CUdeviceptr out, buf, set, copy;
  ASSERT_CU(cuMemAlloc(&out, 4));
  const size_t n = 1u << 20;
  ASSERT_CU(cuMemAlloc(&buf, n));
  ASSERT_CU(cuMemAlloc(&set, n));
  ASSERT_CU(cuMemAlloc(&copy, n));
  std::vector<unsigned char> copied_back(n);
  auto src = pattern(n, 42);
  std::atomic<bool> launched{false}, copied{false};
  unsigned value = 0;
  std::vector<unsigned char> back(n);
  CUresult copy_results[6] = {CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN,
                              CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
  std::thread a([&] {
    if (cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
    unsigned iterations = 100u * 1000 * 1000;
    void* params[] = {&out, &iterations};
    if (cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS) return;
    launched = true;
    // All on the legacy stream, behind the kernel.
    copy_results[0] = cuMemsetD8(set, 0x5a, n);
    copy_results[1] = cuMemcpyDtoD(copy, set, n);
    copy_results[2] = cuMemcpyHtoD(buf, src.data(), n);
    copy_results[3] = cuMemcpyDtoH(&value, out, 4);
    copy_results[4] = cuMemcpyDtoH(back.data(), buf, n);
    copy_results[5] = cuMemcpyDtoH(copied_back.data(), copy, n);
    copied = true;
  });
  while (!launched.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a is inside its first copy
  bool answered_before_copies = true;
  for (int i = 0; i < 5; ++i) {
    size_t free_bytes = 0, total = 0;
    EXPECT_CU(cuMemGetInfo(&free_bytes, &total));
    answered_before_copies = answered_before_copies && !copied.load();
  }
  const bool kernel_still_running = cuStreamQuery(nullptr) == CUDA_ERROR_NOT_READY;
  a.join();
  EXPECT_TRUE(answered_before_copies) << "another thread's copy held up these calls";
  // (The check above means something only if the kernel outlasted our calls.)
  EXPECT_TRUE(kernel_still_running) << "the kernel ended too soon for this test: make it spin longer";
  for (CUresult r : copy_results) EXPECT_CU(r);
  EXPECT_EQ(value, 100u * 1000 * 1000) << "the copy did not wait for the kernel";
  EXPECT_EQ(back, src);
  EXPECT_EQ(copied_back, std::vector<unsigned char>(n, 0x5a));
  ASSERT_CU(cuMemFree(out));
  ASSERT_CU(cuMemFree(buf));
  ASSERT_CU(cuMemFree(set));
  ASSERT_CU(cuMemFree(copy));
  ASSERT_CU(cuModuleUnload(module));
}

// An async copy behind a long kernel on one stream does not hold up another
// stream's async copies: each stream's copies come back in their own order.
TEST_F(Driver, AsyncCopiesOfOneStreamDoNotWaitForAnother) {
  CUmodule module;
  CUfunction spin;
  ASSERT_CU(cuModuleLoadData(&module, kSpinPtx));
  ASSERT_CU(cuModuleGetFunction(&spin, module, "spin"));
  CUstream slow, fast;
  ASSERT_CU(cuStreamCreate(&slow, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreate(&fast, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out, other;
  ASSERT_CU(cuMemAlloc(&out, 4));
  ASSERT_CU(cuMemAlloc(&other, 4));
  ASSERT_CU(cuMemsetD32(other, 7, 1));
  unsigned iterations = 100u * 1000 * 1000;
  void* params[] = {&out, &iterations};
  ASSERT_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, slow, params, nullptr));
  unsigned slow_value = 0, fast_value = 0;
  ASSERT_CU(cuMemcpyDtoHAsync(&slow_value, out, 4, slow));  // queued first, behind the kernel
  ASSERT_CU(cuMemcpyDtoHAsync(&fast_value, other, 4, fast));
  ASSERT_CU(cuStreamSynchronize(fast));
  EXPECT_EQ(fast_value, 7u);
  EXPECT_EQ(cuStreamQuery(slow), CUDA_ERROR_NOT_READY) << "the fast stream's copy waited for the slow stream";
  ASSERT_CU(cuStreamSynchronize(slow));
  EXPECT_EQ(slow_value, iterations);
  ASSERT_CU(cuStreamDestroy(slow));
  ASSERT_CU(cuStreamDestroy(fast));
  ASSERT_CU(cuMemFree(out));
  ASSERT_CU(cuMemFree(other));
  ASSERT_CU(cuModuleUnload(module));
}

TEST_F(Driver, DlopenOfTheDriverReachesRgpu) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_EQ(dlsym(h, "cuInit"), reinterpret_cast<void*>(&cuInit));
  void* again = dlopen("libcuda.so.1", RTLD_NOW);
  EXPECT_EQ(again, h);
  dlclose(again);
  dlclose(h);
}

TEST_F(Driver, ProcAddressAndUnimplementedEntryPoints) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  ASSERT_CU(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));
  EXPECT_EQ(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  const void* table = nullptr;
  CUuuid id{};
  EXPECT_EQ(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  CUgraph graph, clone;
  ASSERT_CU(cuGraphCreate(&graph, 0));
  EXPECT_EQ(cuGraphDebugDotPrint(graph, "/dev/null", 0), CUDA_ERROR_NOT_SUPPORTED);  // a stub
  ASSERT_CU(cuGraphClone(&clone, graph));
  EXPECT_NE(clone, graph);
  ASSERT_CU(cuGraphDestroy(clone));
  ASSERT_CU(cuGraphDestroy(graph));
  const char* name = nullptr;
  ASSERT_CU(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name));
  EXPECT_STREQ(name, "CUDA_ERROR_INVALID_VALUE");
}

// The JIT linker with one PTX input, as programs that compile a kernel at run
// time use it (NVIDIA's ptxjit sample): the linked image loads and its kernel
// runs; the logs are left empty and the wall time 0. Two inputs are refused,
// saying why in the error log, and a destroyed state is a bad handle.
TEST_F(Driver, JitLinkOfOneInputLoadsAndRuns) {
  char info[256] = "untouched";
  char error[256] = "untouched";
  CUjit_option options[] = {CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {reinterpret_cast<void*>(uintptr_t{123}), info, reinterpret_cast<void*>(uintptr_t{sizeof info}),
                    error, reinterpret_cast<void*>(uintptr_t{sizeof error})};
  CUlinkState link = nullptr;
  ASSERT_CU(cuLinkCreate(5, options, values, &link));
  float wall = -1.0f;
  std::memcpy(&wall, &values[0], sizeof wall);
  EXPECT_EQ(wall, 0.0f);
  EXPECT_STREQ(info, "");
  // The PTX's size without its terminator: the linked image must still be a C string.
  ASSERT_CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(kSpinPtx), std::strlen(kSpinPtx), "spin", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  size_t size = 0;
  ASSERT_CU(cuLinkComplete(link, &image, &size));
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(size, std::strlen(kSpinPtx) + 1);
  CUmodule module;
  ASSERT_CU(cuModuleLoadData(&module, image));
  ASSERT_CU(cuLinkDestroy(link));  // the module does not need the link any more
  CUfunction spin;
  ASSERT_CU(cuModuleGetFunction(&spin, module, "spin"));
  CUdeviceptr out;
  ASSERT_CU(cuMemAlloc(&out, 4));
  uint32_t n = 1000;
  void* args[] = {&out, &n};
  ASSERT_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  uint32_t got = 0;
  ASSERT_CU(cuMemcpyDtoH(&got, out, 4));
  EXPECT_EQ(got, 1000u);
  ASSERT_CU(cuMemFree(out));
  ASSERT_CU(cuModuleUnload(module));
  EXPECT_EQ(cuLinkDestroy(link), CUDA_ERROR_INVALID_HANDLE);

  ASSERT_CU(cuLinkCreate(5, options, values, &link));
  for (int i = 0; i < 2; ++i) {
    ASSERT_CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(kSpinPtx), sizeof kSpinPtx, nullptr, 0,
                            nullptr, nullptr));
  }
  EXPECT_EQ(cuLinkComplete(link, &image, &size), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_NE(std::string(error).find("several inputs"), std::string::npos) << error;
  EXPECT_EQ(cuLinkAddData(link, CU_JIT_INPUT_LIBRARY, const_cast<char*>(kSpinPtx), sizeof kSpinPtx, nullptr, 0,
                          nullptr, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_CU(cuLinkDestroy(link));
}

// Calls generated from api/driver.api (Call.invoke), through the
// client's generated stub, the wire and the server's generated row.
TEST_F(Driver, EventArgumentsAreCheckedWhereTheProgramSeesThem) {
  // One-way calls, refused on the client so that the error is the call's.
  CUevent e = nullptr;
  EXPECT_EQ(cuEventCreate(&e, 0x100), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  EXPECT_EQ(cuEventRecordWithFlags(e, nullptr, 0x8), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuEventRecordWithFlags(e, nullptr, CU_EVENT_RECORD_EXTERNAL));  // outside a capture: a record
  ASSERT_CU(cuEventSynchronize(e));
  EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(nullptr, e, e), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuEventDestroy(e));
  // Gone at once: every later use is an invalid handle, one-way or not.
  EXPECT_EQ(cuEventRecord(e, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(&ms, e, e), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(e), CUDA_ERROR_INVALID_HANDLE);
  // A stream is no event.
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(cuEventRecord(reinterpret_cast<CUevent>(s), s), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuCtxSynchronize());  // nothing failed on the server meanwhile
}

TEST_F(Driver, StreamFlagsPriorityAndQueries) {
  int least = 0, greatest = 0;
  ASSERT_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  CUstream s;
  ASSERT_CU(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, greatest));
  unsigned flags = ~0u;
  int priority = 1;
  ASSERT_CU(cuStreamGetFlags(s, &flags));
  EXPECT_EQ(flags, unsigned{CU_STREAM_NON_BLOCKING});
  ASSERT_CU(cuStreamGetPriority(s, &priority));
  EXPECT_EQ(priority, greatest);
  EXPECT_EQ(cuStreamGetFlags(s, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);  // refused here: the call is one-way
  // Queries of the special streams, the per-thread one by the executor.
  EXPECT_CU(cuStreamQuery(nullptr));
  EXPECT_CU(cuStreamQuery(CU_STREAM_PER_THREAD));
  EXPECT_CU(cuStreamGetFlags(CU_STREAM_PER_THREAD, &flags));
  ASSERT_CU(cuStreamDestroy(s));
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuCtxSynchronize());
}

TEST_F(Driver, AnEventOfAnotherContextIsNotRecordedOnThisOnesStream) {
  CUevent theirs;
  CUcontext other;
  ASSERT_CU(cuCtxCreate(&other, nullptr, 0, dev_));
  ASSERT_CU(cuEventCreate(&theirs, 0));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
  // One-way: the refusal comes with the next synchronizing call.
  ASSERT_CU(cuEventRecord(theirs, nullptr));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuCtxSetCurrent(other));
  ASSERT_CU(cuEventRecord(theirs, nullptr));
  ASSERT_CU(cuEventSynchronize(theirs));
  ASSERT_CU(cuEventDestroy(theirs));
  ASSERT_CU(cuCtxDestroy(other));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
}

}  // namespace

// The per-thread entry points, which cuda.h declares only under
// CUDA_API_PER_THREAD_DEFAULT_STREAM (as the plain names' expansions).
extern "C" {
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream, CUstreamCaptureStatus*);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream, CUgraph*);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr, unsigned int, size_t);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec, CUstream);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void*, CUdeviceptr, size_t);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent, CUstream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream);
}

namespace {

// The _ptsz/_ptds entry points (what a program built with
// --default-stream per-thread calls) are their plain names with NULL meaning
// the per-thread stream, and only for that call.
TEST_F(Driver, PerThreadEntryPointsUseThePerThreadStream) {
  // The legacy stream cannot be captured; the per-thread stream can.
  EXPECT_NE(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_CU(cuStreamBeginCapture_v2_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_CU(cuStreamIsCapturing_ptsz(nullptr, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_CU(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 4096));
  ASSERT_CU(cuMemsetD32Async_ptsz(d, 0x01020304u, 1024, nullptr));  // captured, not run
  CUgraph graph = nullptr;
  ASSERT_CU(cuStreamEndCapture_ptsz(nullptr, &graph));
  ASSERT_NE(graph, nullptr);
  CUgraphExec exec;
  ASSERT_CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
  ASSERT_CU(cuMemsetD32_v2_ptds(d, 0, 1024));
  ASSERT_CU(cuGraphLaunch_ptsz(exec, nullptr));
  std::vector<uint32_t> back(1024);
  ASSERT_CU(cuMemcpyDtoH_v2_ptds(back.data(), d, 4096));  // ordered after the launch on the same stream
  EXPECT_EQ(back[0], 0x01020304u);
  EXPECT_EQ(back[1023], 0x01020304u);
  CUevent e;
  ASSERT_CU(cuEventCreate(&e, 0));
  ASSERT_CU(cuEventRecord_ptsz(e, nullptr));
  ASSERT_CU(cuStreamSynchronize_ptsz(nullptr));
  EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);
  ASSERT_CU(cuEventDestroy(e));
  ASSERT_CU(cuGraphExecDestroy(exec));
  ASSERT_CU(cuGraphDestroy(graph));
  ASSERT_CU(cuMemFree(d));
  // The entry point's per-thread meaning ended with it.
  EXPECT_NE(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
}

TEST_F(Driver, GeneratedCalls) {
  int least = 1, greatest = 1;
  ASSERT_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT_LE(greatest, least);  // a lower number is a higher priority
  EXPECT_CU(cuCtxGetStreamPriorityRange(nullptr, &greatest));  // either may be NULL
  unsigned flags = ~0u;
  ASSERT_CU(cuCtxGetFlags(&flags));
  EXPECT_NE(flags, ~0u);
  EXPECT_EQ(cuCtxGetFlags(nullptr), CUDA_ERROR_INVALID_VALUE);

  CUmodule module;
  CUfunction spin;
  ASSERT_CU(cuModuleLoadData(&module, kSpinPtx));
  ASSERT_CU(cuModuleGetFunction(&spin, module, "spin"));
  const char* name = nullptr;
  ASSERT_CU(cuFuncGetName(&name, spin));
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "spin");
  EXPECT_EQ(cuFuncGetName(nullptr, spin), CUDA_ERROR_INVALID_VALUE);
  // A stream is not a function: the server refuses the handle by its kind.
  CUstream stream;
  ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(cuFuncGetName(&name, reinterpret_cast<CUfunction>(stream)), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuStreamDestroy(stream));
  ASSERT_CU(cuModuleUnload(module));

  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, 0x10), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuMemGetInfo(nullptr, &size), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
