// The stream-ordered job every CPU stand-in library queues its work with
// (cpu-libs/include/rgpu/cpu_libs/job.h), on the CPU device linked in:
// regions copied in and out around the work, in stream order; pitched
// regions touching only their runs; regions outside memory refused before
// anything is queued; a captured job owned by the graph, run at every replay
// and released with the graph.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "rgpu/cpu_libs/job.h"

namespace rgpu::cpu_libs {
namespace {

#define CU_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x))

// Adds `step` to every byte of each region it reads and writes; counts its
// runs and its destruction.
struct Bump : JobOf<Bump> {
  Bump(std::atomic<int>* runs, std::atomic<int>* destroyed) : JobOf<Bump>("test"), destroyed_(destroyed) {
    compute = [runs](Bump& self) {
      for (size_t i = 0; i < self.regions(); ++i) {
        const Region& r = self.region(i);
        auto* p = static_cast<uint8_t*>(self.host(i));
        for (uint64_t b = 0; b < r.width * r.runs * r.count; ++b) p[b] = static_cast<uint8_t>(p[b] + 1);
      }
      runs->fetch_add(1);
    };
  }
  ~Bump() override { destroyed_->fetch_add(1); }

 private:
  std::atomic<int>* destroyed_;
};

class CpuLibsJob : public ::testing::Test {
 protected:
  void SetUp() override {
    CU_OK(cuInit(0));
    CUdevice dev;
    CU_OK(cuDeviceGet(&dev, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx_, dev));
    dev_ = dev;
    CU_OK(cuCtxSetCurrent(ctx_));
    CU_OK(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override {
    cuStreamDestroy(stream_);
    cuDevicePrimaryCtxRelease(dev_);
  }
  // Waits, bounded, for the count to reach `want` (a graph's user objects
  // are released without waiting for the destructor).
  static bool reaches(const std::atomic<int>& n, int want) {
    for (int i = 0; i < 2000 && n.load() < want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return n.load() == want;
  }
  CUcontext ctx_ = nullptr;
  CUdevice dev_ = 0;
  CUstream stream_ = nullptr;
};

TEST_F(CpuLibsJob, RunsInStreamOrderBetweenItsCopies) {
  std::vector<uint8_t> in(256), out(256);
  for (int i = 0; i < 256; ++i) in[i] = static_cast<uint8_t>(i);
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 256));
  CU_OK(cuMemcpyHtoD(d, in.data(), 256));
  std::atomic<int> runs{0}, destroyed{0};
  auto job = std::make_unique<Bump>(&runs, &destroyed);
  job->add(Region::span(d, 256, true, true));
  job->usage = std::make_shared<Usage>();
  auto usage = job->usage;
  // Queued behind a memset on the same stream: the job reads its result.
  CU_OK(cuMemsetD8Async(d, 40, 128, stream_));
  ASSERT_EQ(Queued::kYes, submit(std::move(job), stream_));
  CU_OK(cuStreamSynchronize(stream_));
  CU_OK(cuMemcpyDtoH(out.data(), d, 256));
  for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], static_cast<uint8_t>((i < 128 ? 40 : i) + 1)) << i;
  EXPECT_EQ(1, runs.load());
  EXPECT_TRUE(reaches(destroyed, 1));
  EXPECT_EQ(1u, usage->jobs.load());
  CU_OK(cuMemFree(d));
}

TEST_F(CpuLibsJob, PitchedRegionsTouchOnlyTheirRuns) {
  // 4 runs of 8 bytes, 16 bytes apart, 2 entries 80 bytes apart.
  const size_t total = 160;
  std::vector<uint8_t> in(total, 7), out(total);
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, total));
  CU_OK(cuMemcpyHtoD(d, in.data(), total));
  std::atomic<int> runs{0}, destroyed{0};
  auto job = std::make_unique<Bump>(&runs, &destroyed);
  job->add(Region{d, 8, 4, 16, 2, 80, true, true});
  ASSERT_EQ(Queued::kYes, submit(std::move(job), stream_));
  CU_OK(cuStreamSynchronize(stream_));
  CU_OK(cuMemcpyDtoH(out.data(), d, total));
  for (size_t b = 0; b < total; ++b) {
    size_t in_entry = b % 80;
    bool in_run = in_entry < 64 && in_entry % 16 < 8;
    ASSERT_EQ(out[b], in_run ? 8 : 7) << "byte " << b;
  }
  CU_OK(cuMemFree(d));
}

TEST_F(CpuLibsJob, RegionsOutsideMemoryAreRefusedBeforeAnythingRuns) {
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 64));
  std::atomic<int> runs{0}, destroyed{0};
  {
    auto job = std::make_unique<Bump>(&runs, &destroyed);
    job->add(Region::span(d, 64, true, true));
    job->add(Region::span(d + 32, 64, true, false));  // 32 bytes past the end
    EXPECT_EQ(Queued::kOutside, submit(std::move(job), stream_));
  }
  {
    auto job = std::make_unique<Bump>(&runs, &destroyed);
    job->add(Region{d, ~0ull / 2, 4, ~0ull / 2, 1, 0, true, false});  // width * runs overflows
    EXPECT_EQ(Queued::kTooLarge, submit(std::move(job), stream_));
  }
  CU_OK(cuStreamSynchronize(stream_));
  EXPECT_EQ(0, runs.load());
  EXPECT_EQ(2, destroyed.load());  // refused jobs die in submit
  CU_OK(cuMemFree(d));
}

TEST_F(CpuLibsJob, ACapturedJobRunsAtEveryReplayAndDiesWithTheGraph) {
  std::vector<uint8_t> zero(64, 0), out(64);
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 64));
  CU_OK(cuMemcpyHtoD(d, zero.data(), 64));
  std::atomic<int> runs{0}, destroyed{0};
  CU_OK(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  auto job = std::make_unique<Bump>(&runs, &destroyed);
  job->add(Region::span(d, 64, true, true));
  ASSERT_EQ(Queued::kYes, submit(std::move(job), stream_));
  CUgraph graph = nullptr;
  CU_OK(cuStreamEndCapture(stream_, &graph));
  EXPECT_EQ(0, runs.load());  // nothing runs while capturing
  CUgraphExec exec = nullptr;
  CU_OK(cuGraphInstantiateWithFlags(&exec, graph, 0));
  CU_OK(cuGraphDestroy(graph));  // the executable keeps the job
  for (int i = 0; i < 3; ++i) CU_OK(cuGraphLaunch(exec, stream_));
  CU_OK(cuStreamSynchronize(stream_));
  CU_OK(cuMemcpyDtoH(out.data(), d, 64));
  for (int b = 0; b < 64; ++b) ASSERT_EQ(3, out[b]) << b;
  EXPECT_EQ(3, runs.load());
  EXPECT_EQ(0, destroyed.load()) << "released while the executable graph still runs it";
  CU_OK(cuGraphExecDestroy(exec));
  EXPECT_TRUE(reaches(destroyed, 1));
  CU_OK(cuMemFree(d));
}

}  // namespace
}  // namespace rgpu::cpu_libs
