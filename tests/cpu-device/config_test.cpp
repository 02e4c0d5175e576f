// Tests of the configuration read from the environment at cuInit.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

TEST(CpuDeviceConfig, VariablesSetDevicesMemoryAndThreads) {
  CudaLib& cu = private_lib({{"RGPU_CPU_DEVICES", "3"}, {"RGPU_CPU_DEVICE_MEMORY", "512K"}, {"RGPU_CPU_THREADS", "7"}});
  ASSERT_EQ("", cu.missing);
  CU_OK(cu.cuInit(0));
  int n = 0;
  CU_OK(cu.cuDeviceGetCount(&n));
  EXPECT_EQ(3, n);
  size_t total = 0;
  CU_OK(cu.cuDeviceTotalMem(&total, 2));
  EXPECT_EQ(512u * 1024, total);
  int sms = 0;
  CU_OK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  EXPECT_EQ(7, sms);
  char name[64];
  CU_OK(cu.cuDeviceGetName(name, sizeof(name), 2));
  EXPECT_STREQ("rgpu CPU device 2", name);
}

TEST(CpuDeviceConfig, SizeSuffixes) {
  struct Case {
    const char* text;
    size_t bytes;
  };
  for (Case c : {Case{"1048576", 1u << 20}, Case{"2M", 2u << 20}, Case{"3m", 3u << 20}, Case{"1G", 1ull << 30},
                 Case{"64KiB", 64u << 10}, Case{"8MB", 8u << 20}}) {
    CudaLib& cu = private_lib({{"RGPU_CPU_DEVICE_MEMORY", c.text}});
    CU_OK(cu.cuInit(0));
    size_t total = 0;
    CU_OK(cu.cuDeviceTotalMem(&total, 0));
    EXPECT_EQ(c.bytes, total) << c.text;
  }
}

TEST(CpuDeviceConfig, DefaultsAreOneDeviceOf4GiB) {
  CudaLib& cu = private_lib({});
  CU_OK(cu.cuInit(0));
  int n = 0;
  CU_OK(cu.cuDeviceGetCount(&n));
  EXPECT_EQ(1, n);
  size_t total = 0;
  CU_OK(cu.cuDeviceTotalMem(&total, 0));
  EXPECT_EQ(4ull << 30, total);
  int sms = 0;
  CU_OK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  EXPECT_GE(sms, 1);
}

TEST(CpuDeviceConfig, MalformedValuesFailCuInit) {
  for (auto env : std::vector<std::map<std::string, std::string>>{
           {{"RGPU_CPU_DEVICES", "zero"}}, {{"RGPU_CPU_DEVICES", "0"}}, {{"RGPU_CPU_DEVICE_MEMORY", "12Q"}},
           {{"RGPU_CPU_DEVICE_MEMORY", "0"}}, {{"RGPU_CPU_DEVICE_MEMORY", "G"}},
           {{"RGPU_CPU_DEVICE_MEMORY", "99999999999999999999"}}, {{"RGPU_CPU_THREADS", "-2"}},
           {{"RGPU_CPU_STREAM_WORKERS", "0"}}, {{"RGPU_CPU_STREAM_WORKERS", "many"}},
           {{"RGPU_CPU_WORKER_NICE", "-1"}}, {{"RGPU_CPU_WORKER_NICE", "20"}}, {{"RGPU_CPU_WORKER_NICE", "low"}}}) {
    CudaLib& cu = private_lib(env);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuInit(0)) << env.begin()->first << "=" << env.begin()->second;
    int n = 0;
    EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cu.cuDeviceGetCount(&n));
  }
}

// The niceness a host function's thread runs at (the stream's work threads
// take the same), on a private instance configured by `env`.
int work_thread_nice(const std::map<std::string, std::string>& env) {
  CudaLib& cu = private_lib(env);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuInit(0));
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  EXPECT_EQ(CUDA_SUCCESS, cu.cuDeviceGet(&dev, 0));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(ctx));
  int nice = -100;
  auto record = [](void* p) {
    errno = 0;
    *static_cast<int*>(p) = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  };
  EXPECT_EQ(CUDA_SUCCESS, cu.cuLaunchHostFunc(nullptr, record, &nice));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(nullptr));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRelease(dev));
  return nice;
}

TEST(CpuDeviceConfig, WorkThreadsRunBelowTheServersPriority) {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);  // a work thread never goes above its process
  ASSERT_EQ(0, errno);
  EXPECT_EQ(std::max(own, 10), work_thread_nice({})) << "default RGPU_CPU_WORKER_NICE";
  EXPECT_EQ(std::max(own, 3), work_thread_nice({{"RGPU_CPU_WORKER_NICE", "3"}}));
  EXPECT_EQ(own, work_thread_nice({{"RGPU_CPU_WORKER_NICE", "0"}}));
}

}  // namespace
}  // namespace rgpu::cpudev::test
