// Tests of streams: asynchrony, ordering, the legacy default stream,
// cross-stream waits, concurrency and error cases.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda_lib.h"
#include "gate.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceStream = CpuDeviceTest;

uint8_t peek(CUdeviceptr p) { return *reinterpret_cast<volatile uint8_t*>(p); }  // same process: readable

TEST_F(CpuDeviceStream, CreateDestroyAndStaleHandles) {
  CUstream s = nullptr;
  CU_OK(cu.cuStreamCreate(&s, 0));
  EXPECT_NE(nullptr, s);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamQuery(s));
  CU_OK(cu.cuStreamSynchronize(s));
  CU_OK(cu.cuStreamDestroy(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamDestroy(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamSynchronize(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamQuery(s));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuMemsetD8Async(p, 0, 16, s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamDestroy(nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamSynchronize(reinterpret_cast<CUstream>(0xabcdef0)));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamCreate(nullptr, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamCreate(&s, 0x10));
  CU_OK(cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -100));  // clamped
  CU_OK(cu.cuStreamDestroy(s));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceStream, AsyncWorkIsAsynchronousAndOrdered) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4096));
  std::vector<uint8_t> src(4096, 0x11), dst(4096, 0);
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  CU_OK(cu.cuMemcpyHtoDAsync(p, src.data(), 4096, s));
  CU_OK(cu.cuMemsetD8Async(p + 10, 0x22, 10, s));
  CU_OK(cu.cuMemsetD16Async(p + 100, 0x3333, 4, s));
  CU_OK(cu.cuMemsetD32Async(p + 200, 0x44444444, 4, s));
  CU_OK(cu.cuMemcpyDtoHAsync(dst.data(), p, 4096, s));
  ASSERT_TRUE(gate.wait_entered(1));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(s));
  EXPECT_EQ(0, peek(p));  // nothing ran yet
  EXPECT_EQ(0, dst[0]);
  gate.open();
  CU_OK(cu.cuStreamSynchronize(s));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamQuery(s));
  EXPECT_EQ(0x11, dst[0]);
  EXPECT_EQ(0x22, dst[10]);
  EXPECT_EQ(0x22, dst[19]);
  EXPECT_EQ(0x11, dst[20]);
  EXPECT_EQ(0x33, dst[107]);
  EXPECT_EQ(0x44, dst[215]);
  EXPECT_EQ(0x11, dst[216]);
  CU_OK(cu.cuMemFree(p));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceStream, ManyOperationsKeepTheirOrder) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUdeviceptr a = 0, b = 0;
  CU_OK(cu.cuMemAlloc(&a, 4));
  CU_OK(cu.cuMemAlloc(&b, 4));
  // a <- i, then b <- a, 500 times: b ends with the last value only if
  // every pair ran in order.
  std::vector<uint32_t> out(500, 0);
  for (uint32_t i = 0; i < 500; ++i) {
    CU_OK(cu.cuMemsetD32Async(a, i, 1, s));
    CU_OK(cu.cuMemcpyDtoDAsync(b, a, 4, s));
    CU_OK(cu.cuMemcpyDtoHAsync(&out[i], b, 4, s));
  }
  CU_OK(cu.cuStreamSynchronize(s));
  for (uint32_t i = 0; i < 500; ++i) ASSERT_EQ(i, out[i]);
  CU_OK(cu.cuStreamDestroy(s));
  CU_OK(cu.cuMemFree(a));
  CU_OK(cu.cuMemFree(b));
}

TEST_F(CpuDeviceStream, WaitEventOrdersAcrossStreams) {
  CUstream s1, s2;
  CU_OK(cu.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 8));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s1, &Gate::hold, &gate));
  CU_OK(cu.cuMemsetD8Async(p, 1, 8, s1));
  CU_OK(cu.cuEventRecord(e, s1));
  CU_OK(cu.cuStreamWaitEvent(s2, e, 0));
  CU_OK(cu.cuMemsetD8Async(p + 4, 2, 4, s2));  // must land after s1's memset
  ASSERT_TRUE(gate.wait_entered(1));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(s2));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuEventQuery(e));
  // A wait on an event recorded later does not see this record: re-recording
  // e on an idle stream makes a new wait complete at once.
  CUstream s3;
  CU_OK(cu.cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(s2));
  uint8_t h[8];
  CU_OK(cu.cuMemcpyDtoH(h, p, 8));
  EXPECT_EQ(1, h[0]);
  EXPECT_EQ(2, h[4]);
  EXPECT_EQ(2, h[7]);
  CU_OK(cu.cuStreamWaitEvent(s3, e, 0));
  CU_OK(cu.cuStreamSynchronize(s3));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamWaitEvent(s3, e, 0x80));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamWaitEvent(s3, reinterpret_cast<CUevent>(0x999), 0));
  CU_OK(cu.cuEventDestroy(e));
  CU_OK(cu.cuStreamDestroy(s1));
  CU_OK(cu.cuStreamDestroy(s2));
  CU_OK(cu.cuStreamDestroy(s3));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceStream, WaitOnNeverRecordedEventIsANoOp) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, 0));
  CU_OK(cu.cuStreamWaitEvent(s, e, 0));
  CU_OK(cu.cuStreamSynchronize(s));
  CU_OK(cu.cuEventDestroy(e));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceStream, LegacyStreamWaitsForBlockingStreams) {
  CUstream blocking;
  CU_OK(cu.cuStreamCreate(&blocking, 0));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 16));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(blocking, &Gate::hold, &gate));
  CU_OK(cu.cuMemsetD8Async(p, 1, 16, blocking));
  CU_OK(cu.cuMemsetD8Async(p, 2, 8, nullptr));  // legacy: after the blocking stream's work
  CU_OK(cu.cuMemsetD8Async(p, 3, 4, blocking));  // blocking again: after the legacy work
  ASSERT_TRUE(gate.wait_entered(1));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(nullptr));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(CU_STREAM_LEGACY));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(blocking));
  uint8_t h[16];
  CU_OK(cu.cuMemcpyDtoH(h, p, 16));
  EXPECT_EQ(3, h[0]);
  EXPECT_EQ(2, h[4]);
  EXPECT_EQ(1, h[8]);
  CU_OK(cu.cuStreamDestroy(blocking));
  CU_OK(cu.cuMemFree(p));
}

// A small synchronous copy runs on the caller's thread only when nothing it
// must wait for is in flight: behind held work it still waits its turn.
TEST_F(CpuDeviceStream, SmallSyncCopyWaitsForWorkInFlight) {
  CUstream blocking;
  CU_OK(cu.cuStreamCreate(&blocking, 0));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 16));
  CU_OK(cu.cuMemsetD8(p, 0, 16));  // idle: runs at once
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(blocking, &Gate::hold, &gate));
  CU_OK(cu.cuMemsetD8Async(p, 7, 16, blocking));
  ASSERT_TRUE(gate.wait_entered(1));
  uint8_t h[4] = {};
  std::atomic<bool> copied{false};
  std::thread reader([&] {
    if (cu.cuCtxSetCurrent(ctx) == CUDA_SUCCESS && cu.cuMemcpyDtoH(h, p, 4) == CUDA_SUCCESS) copied = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(copied.load()) << "the legacy-stream copy overtook the blocking stream's held work";
  gate.open();
  reader.join();
  EXPECT_TRUE(copied.load());
  EXPECT_EQ(7, h[0]);
  EXPECT_EQ(7, h[3]);
  // Idle again: a small copy on a user stream also runs at once, in order.
  uint8_t one = 9;
  CU_OK(cu.cuMemcpyHtoD(p, &one, 1));
  CU_OK(cu.cuMemcpyDtoH(h, p, 1));
  EXPECT_EQ(9, h[0]);
  CU_OK(cu.cuStreamDestroy(blocking));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceStream, NonBlockingStreamsDoNotSynchronizeWithLegacy) {
  CUstream nb;
  CU_OK(cu.cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 16));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(nb, &Gate::hold, &gate));
  ASSERT_TRUE(gate.wait_entered(1));
  // Legacy work, synchronous copies and cuStreamSynchronize(NULL) complete
  // while the non-blocking stream is held.
  CU_OK(cu.cuMemsetD8Async(p, 5, 16, nullptr));
  CU_OK(cu.cuStreamSynchronize(nullptr));
  uint8_t h[16];
  CU_OK(cu.cuMemcpyDtoH(h, p, 16));
  EXPECT_EQ(5, h[0]);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(nb));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(nb));
  CU_OK(cu.cuStreamDestroy(nb));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceStream, PerThreadStreamIsOrderedAndSynchronizable) {
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4));
  uint32_t out = 0;
  CU_OK(cu.cuMemsetD32Async(p, 77, 1, CU_STREAM_PER_THREAD));
  CU_OK(cu.cuMemcpyDtoHAsync(&out, p, 4, CU_STREAM_PER_THREAD));
  CU_OK(cu.cuStreamSynchronize(CU_STREAM_PER_THREAD));
  EXPECT_EQ(77u, out);
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceStream, SynchronizeBlocksOnlyItsOwnStream) {
  CUstream held, free_stream;
  CU_OK(cu.cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
  CU_OK(cu.cuStreamCreate(&free_stream, CU_STREAM_NON_BLOCKING));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(held, &Gate::hold, &gate));
  ASSERT_TRUE(gate.wait_entered(1));
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(ctx));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamSynchronize(held));
    returned = true;
  });
  // Meanwhile everything else keeps working, on this thread and others.
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 64));
  CU_OK(cu.cuMemsetD8Async(p, 4, 64, free_stream));
  CU_OK(cu.cuStreamSynchronize(free_stream));
  CUstream extra;
  CU_OK(cu.cuStreamCreate(&extra, 0));
  CU_OK(cu.cuStreamDestroy(extra));
  std::thread other([&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(ctx));
    uint8_t h[64];
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoHAsync(h, p, 64, free_stream));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamSynchronize(free_stream));
    EXPECT_EQ(4, h[63]);
  });
  other.join();
  EXPECT_FALSE(returned.load());
  gate.open();
  waiter.join();
  EXPECT_TRUE(returned.load());
  CU_OK(cu.cuMemFree(p));
  CU_OK(cu.cuStreamDestroy(held));
  CU_OK(cu.cuStreamDestroy(free_stream));
}

TEST_F(CpuDeviceStream, DestroyedStreamFinishesQueuedWork) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  CU_OK(cu.cuMemsetD32Async(p, 123, 1, s));
  CU_OK(cu.cuStreamDestroy(s));  // returns at once; the work still runs
  gate.open();
  CU_OK(cu.cuCtxSynchronize());
  uint32_t v = 0;
  CU_OK(cu.cuMemcpyDtoH(&v, p, 4));
  EXPECT_EQ(123u, v);
  CU_OK(cu.cuMemFree(p));
}

// As on a GPU, cuMemFree waits for the work enqueued before it: a copy
// queued behind a held host function still finds its memory.
TEST_F(CpuDeviceStream, FreeWaitsForQueuedWork) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4096));
  std::vector<uint8_t> host(4096, 1);
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  CU_OK(cu.cuMemcpyHtoDAsync(p, host.data(), 4096, s));
  EXPECT_TRUE(gate.call_waits_for_opening([&] { CU_OK(cu.cuMemFree(p)); }));
  CU_OK(cu.cuStreamSynchronize(s));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceStream, ManyThreadsManyStreams) {
  constexpr int kWorkers = 6;
  constexpr int kRounds = 60;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWorkers; ++t) {
    threads.emplace_back([&, t] {
      if (cu.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        ++failures;
        return;
      }
      CUstream s;
      if (cu.cuStreamCreate(&s, t % 2 ? CU_STREAM_NON_BLOCKING : 0) != CUDA_SUCCESS) {
        ++failures;
        return;
      }
      std::vector<uint32_t> in(1024), out(1024);
      for (int r = 0; r < kRounds; ++r) {
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(t * 100000 + r * 1000 + i);
        CUdeviceptr p = 0;
        bool ok = cu.cuMemAlloc(&p, in.size() * 4) == CUDA_SUCCESS &&
                  cu.cuMemcpyHtoDAsync(p, in.data(), in.size() * 4, s) == CUDA_SUCCESS &&
                  cu.cuMemcpyDtoHAsync(out.data(), p, out.size() * 4, s) == CUDA_SUCCESS &&
                  cu.cuStreamSynchronize(s) == CUDA_SUCCESS && cu.cuMemFree(p) == CUDA_SUCCESS && in == out;
        if (!ok) ++failures;
      }
      if (cu.cuStreamDestroy(s) != CUDA_SUCCESS) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(0, failures.load());
  size_t free = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free, &total));
  EXPECT_EQ(total, free);
}

struct HostCall {
  CudaLib* cu;
  CUresult sync = CUDA_SUCCESS;
  CUresult alloc = CUDA_SUCCESS;
};

void CUDA_CB call_api(void* user) {
  auto* h = static_cast<HostCall*>(user);
  h->sync = h->cu->cuCtxSynchronize();
  CUdeviceptr p;
  h->alloc = h->cu->cuMemAlloc(&p, 16);
}

TEST_F(CpuDeviceStream, HostFunctionsMayNotCallTheApi) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  HostCall h{&cu};
  CU_OK(cu.cuLaunchHostFunc(s, &call_api, &h));
  CU_OK(cu.cuStreamSynchronize(s));
  EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.sync);
  EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.alloc);
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceStream, LaunchWithBadHandles) {
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE,
            cu.cuLaunchKernel(reinterpret_cast<CUfunction>(0x10), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchHostFunc(nullptr, nullptr, nullptr));
}

}  // namespace
}  // namespace rgpu::cpudev::test
