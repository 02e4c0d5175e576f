// Tests of the stream scheduler: a bounded set of threads runs any number of
// streams, waits between streams park instead of holding a worker, and host
// functions that block do not hold up other streams.
#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>
#include <vector>

#include "cuda_lib.h"
#include "gate.h"

namespace rgpu::cpudev::test {
namespace {

// Threads of this process now.
int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

std::vector<char> fatbin() {
  std::ifstream in(RGPU_CPUDEV_TEST_FATBIN, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A private library with `workers` stream workers, initialized, with a
// context current on the calling thread.
CudaLib& library_with(const char* workers, CUcontext* ctx) {
  CudaLib& cu = private_lib({{"RGPU_CPU_STREAM_WORKERS", workers}, {"RGPU_CPU_THREADS", "2"},
                             {"RGPU_CPU_DEVICE_MEMORY", "64M"}});
  EXPECT_EQ("", cu.missing);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuInit(0));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxCreate(ctx, nullptr, 0, 0));
  return cu;
}

// Runs `f` on another thread; if it has not returned after 20 s (a safety
// net far above what it takes) the process ends rather than hang.
template <class F>
void bounded(const char* what, F f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "%s did not return\n", what);
    std::_Exit(1);
  }
  done.get();
}

TEST(CpuDeviceScheduler, ThousandsOfStreamsRunOnAFewThreads) {
  CUcontext ctx;
  CudaLib& cu = library_with("4", &ctx);
  std::vector<char> image = fatbin();
  CUmodule mod;
  CU_OK(cu.cuModuleLoadData(&mod, image.data()));
  CUfunction poke;
  CU_OK(cu.cuModuleGetFunction(&poke, mod, "poke"));
  constexpr int kStreams = 2000;
  CUdeviceptr buf;
  CU_OK(cu.cuMemAlloc(&buf, kStreams * 4));
  CU_OK(cu.cuMemsetD32(buf, 7, kStreams));
  int before = thread_count();
  std::vector<CUstream> streams(kStreams);
  int peak = before;
  for (int i = 0; i < kStreams; ++i) {
    CU_OK(cu.cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
    CU_OK(cu.cuMemsetD32Async(buf + 4 * i, 0, 1, streams[i]));
    long long offset = i;
    void* args[] = {&buf, &offset};
    CU_OK(cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, streams[i], args, nullptr));
    if (i % 100 == 0) peak = std::max(peak, thread_count());
  }
  peak = std::max(peak, thread_count());
  CU_OK(cu.cuCtxSynchronize());
  std::vector<int> out(kStreams);
  CU_OK(cu.cuMemcpyDtoH(out.data(), buf, kStreams * 4));
  for (int i = 0; i < kStreams; ++i) ASSERT_EQ(42, out[i]) << i;
  for (CUstream s : streams) CU_OK(cu.cuStreamDestroy(s));
  // The stream workers exist from cuInit; only the kernel workers (2) start
  // with the first launch. A thread per stream would add 2,000. (Counted
  // from `before`: other library instances of this process, when the whole
  // binary runs in one, keep threads of their own.)
  EXPECT_LT(peak - before, 16) << "threads before " << before << ", peak " << peak;
  CU_OK(cu.cuCtxDestroy(ctx));
}

TEST(CpuDeviceScheduler, CrossStreamWaitsParkWithOneWorker) {
  CUcontext ctx;
  CudaLib& cu = library_with("1", &ctx);
  constexpr int kChain = 10;
  CUdeviceptr buf;
  CU_OK(cu.cuMemAlloc(&buf, kChain * 4));
  CU_OK(cu.cuMemsetD32(buf, 0, kChain));
  std::vector<CUstream> s(kChain + 1);
  std::vector<CUevent> e(kChain);
  for (auto& x : s) CU_OK(cu.cuStreamCreate(&x, CU_STREAM_NON_BLOCKING));
  for (auto& x : e) CU_OK(cu.cuEventCreate(&x, CU_EVENT_DISABLE_TIMING));
  // s[kChain] is held by a host function, then records e[kChain - 1]; each
  // s[i] waits for e[i], writes its slot and records e[i - 1]. The waits are
  // enqueued long before what they wait for runs: with one worker, a wait
  // that held the worker would block the chain forever.
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s[kChain], &Gate::hold, &gate));
  CU_OK(cu.cuEventRecord(e[kChain - 1], s[kChain]));
  for (int i = kChain - 1; i >= 0; --i) {
    CU_OK(cu.cuStreamWaitEvent(s[i], e[i], 0));
    CU_OK(cu.cuMemsetD32Async(buf + 4 * i, static_cast<unsigned>(i + 1), 1, s[i]));
    if (i > 0) {
      CU_OK(cu.cuEventRecord(e[i - 1], s[i]));
    }
  }
  ASSERT_TRUE(gate.wait_entered(1));
  // While the whole chain is parked, an unrelated stream still runs.
  CUstream free_stream;
  CU_OK(cu.cuStreamCreate(&free_stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr other;
  CU_OK(cu.cuMemAlloc(&other, 4));
  CU_OK(cu.cuMemsetD32Async(other, 5, 1, free_stream));
  bounded("an unrelated stream", [&] { EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamSynchronize(free_stream)); });
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(s[0]));
  int first = -1;
  CU_OK(cu.cuMemcpyDtoHAsync(&first, buf, 4, free_stream));
  CU_OK(cu.cuStreamSynchronize(free_stream));
  EXPECT_EQ(0, first);  // s[0] has not written yet
  gate.open();
  bounded("the chain", [&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(ctx));  // the context stack is per thread
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  });
  std::vector<int> out(kChain);
  CU_OK(cu.cuMemcpyDtoH(out.data(), buf, kChain * 4));
  for (int i = 0; i < kChain; ++i) EXPECT_EQ(i + 1, out[i]) << i;
  CU_OK(cu.cuCtxDestroy(ctx));
}

TEST(CpuDeviceScheduler, BlockedHostFunctionsDoNotHoldUpOtherContexts) {
  CUcontext blocked;
  CudaLib& cu = library_with("1", &blocked);
  constexpr int kHeld = 8;
  Gate gate;
  std::vector<CUstream> held(kHeld);
  for (auto& s : held) {
    CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  }
  ASSERT_TRUE(gate.wait_entered(kHeld));  // all held at once: none waits for another

  CUcontext other;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  std::vector<char> image = fatbin();
  CUmodule mod;
  CU_OK(cu.cuModuleLoadData(&mod, image.data()));
  CUfunction poke;
  CU_OK(cu.cuModuleGetFunction(&poke, mod, "poke"));
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p;
  CU_OK(cu.cuMemAlloc(&p, 4));
  CU_OK(cu.cuMemsetD32Async(p, 0, 1, s));
  long long zero = 0;
  void* args[] = {&p, &zero};
  CU_OK(cu.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr));
  int v = -1;
  CU_OK(cu.cuMemcpyDtoHAsync(&v, p, 4, s));
  bounded("the other context's stream", [&] { EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamSynchronize(s)); });
  EXPECT_EQ(42, v);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(held[0]));
  gate.open();
  CU_OK(cu.cuCtxDestroy(other));
  CU_OK(cu.cuCtxSetCurrent(blocked));
  bounded("the held streams", [&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(blocked));  // the context stack is per thread
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  });
  CU_OK(cu.cuCtxDestroy(blocked));
}

TEST(CpuDeviceScheduler, DestroyDoesNotWaitForAnotherContextsStream) {
  CUcontext waiting;
  CudaLib& cu = library_with("2", &waiting);
  CUcontext holder;
  CU_OK(cu.cuCtxCreate(&holder, nullptr, 0, 0));  // current now
  Gate gate;
  CUstream hs;
  CU_OK(cu.cuStreamCreate(&hs, CU_STREAM_NON_BLOCKING));
  CU_OK(cu.cuLaunchHostFunc(hs, &Gate::hold, &gate));
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CU_OK(cu.cuEventRecord(e, hs));
  ASSERT_TRUE(gate.wait_entered(1));
  CU_OK(cu.cuCtxSetCurrent(waiting));
  CUstream ws;
  CU_OK(cu.cuStreamCreate(&ws, CU_STREAM_NON_BLOCKING));
  CU_OK(cu.cuStreamWaitEvent(ws, e, 0));
  CUdeviceptr p;
  CU_OK(cu.cuMemAlloc(&p, 4));
  CU_OK(cu.cuMemsetD32Async(p, 1, 1, ws));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(ws));
  // The other context's stream stays held while this one is destroyed.
  bounded("cuCtxDestroy", [&] { EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxDestroy(waiting)); });
  gate.open();
  CU_OK(cu.cuCtxSetCurrent(holder));
  CU_OK(cu.cuCtxSynchronize());
  CU_OK(cu.cuCtxDestroy(holder));
}

}  // namespace
}  // namespace rgpu::cpudev::test
