// rgpuDeviceGetUtilization: kernels running on a stream make the device's
// gpu share rise, copies its memory share, and an idle device goes back down.
// Only orderings are asserted (above or below a half, within bounded waits),
// never durations.
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(20);  // generous on a loaded machine

struct Shares {
  unsigned gpu = 0;
  unsigned memory = 0;
};

class Utilization : public CpuDeviceTest {
 protected:
  Shares now() {
    Shares s;
    EXPECT_EQ(CUDA_SUCCESS, cu.rgpuDeviceGetUtilization(&s.gpu, &s.memory, 0));
    EXPECT_LE(s.gpu, 100u);
    EXPECT_LE(s.memory, 100u);
    return s;
  }
  // Polls until `done` holds of the shares or the patience runs out; calls
  // `work` between polls. True if `done` held.
  template <class Done, class Work>
  bool until(Done done, Work work) {
    for (auto end = Clock::now() + kPatience; Clock::now() < end;) {
      if (done(now())) return true;
      work();
    }
    return false;
  }
  void sleep() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }
};

TEST_F(Utilization, KernelLoopMakesTheDeviceBusyThenIdle) {
  std::ifstream in(RGPU_CPUDEV_TEST_FATBIN, std::ios::binary);
  std::vector<char> fatbin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(fatbin.size(), 16u);
  CUmodule mod;
  CU_OK(cu.cuModuleLoadData(&mod, fatbin.data()));
  CUfunction spin;
  CU_OK(cu.cuModuleGetFunction(&spin, mod, "spin"));
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out;
  CU_OK(cu.cuMemAlloc(&out, 4));
  int iterations = 100000;
  void* args[] = {&out, &iterations};
  // Two kernels queued whenever the stream drains: the device is busy but for
  // the moments between a poll and the next launch. Kernels that finish
  // before the next poll (compiled, on a fast host) are made longer.
  bool busy = until([](Shares u) { return u.gpu > 50; }, [&] {
    if (cu.cuStreamQuery(s) == CUDA_SUCCESS) {
      if (iterations < (1 << 28)) iterations *= 2;
      ASSERT_EQ(CUDA_SUCCESS, cu.cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
      ASSERT_EQ(CUDA_SUCCESS, cu.cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_TRUE(busy) << "the gpu share never rose above 50 while kernels ran";
  CU_OK(cu.cuStreamSynchronize(s));
  EXPECT_TRUE(until([](Shares u) { return u.gpu < 50; }, [&] { sleep(); }))
      << "the gpu share stayed at 50 or above on an idle device";
  CU_OK(cu.cuStreamDestroy(s));
  CU_OK(cu.cuMemFree(out));
  CU_OK(cu.cuModuleUnload(mod));
}

TEST_F(Utilization, CopiesMakeTheMemoryBusyThenIdle) {
  constexpr size_t kBytes = 8u << 20;
  std::vector<char> host(kBytes, 1);
  CUdeviceptr dev;
  CU_OK(cu.cuMemAlloc(&dev, kBytes));
  bool busy = until([](Shares u) { return u.memory > 50; },
                    [&] { ASSERT_EQ(CUDA_SUCCESS, cu.cuMemcpyHtoD(dev, host.data(), kBytes)); });
  EXPECT_TRUE(busy) << "the memory share never rose above 50 while copies ran";
  EXPECT_TRUE(until([](Shares u) { return u.memory < 50; }, [&] { sleep(); }))
      << "the memory share stayed at 50 or above on an idle device";
  CU_OK(cu.cuMemFree(dev));
}

TEST_F(Utilization, RefusesAnUnknownDeviceAndNullPointers) {
  unsigned gpu = 0, memory = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.rgpuDeviceGetUtilization(&gpu, &memory, 99));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.rgpuDeviceGetUtilization(&gpu, &memory, -1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuDeviceGetUtilization(nullptr, &memory, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuDeviceGetUtilization(&gpu, nullptr, 0));
}

}  // namespace
}  // namespace rgpu::cpudev::test
