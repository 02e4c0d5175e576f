// End to end: a program run with RGPU_REQUEST="mem=64M" (set by ctest) sees
// a 64 MiB device through the ordinary driver API and can allocate exactly
// that much.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

constexpr size_t kQuota = size_t{64} << 20;

TEST(Quota, TheDeviceIsTheQuotaAndAllocationsStopAtIt) {
  const char* request = std::getenv("RGPU_REQUEST");
  ASSERT_NE(request, nullptr) << "run by ctest with RGPU_REQUEST=mem=64M";
  ASSERT_CU(cuInit(0));
  CUdevice dev = 0;
  ASSERT_CU(cuDeviceGet(&dev, 0));
  size_t total = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, dev));
  EXPECT_EQ(total, kQuota);
  CUcontext ctx = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  ASSERT_CU(cuCtxSetCurrent(ctx));
  size_t free_bytes = 0;
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(total, kQuota);
  EXPECT_EQ(free_bytes, kQuota);

  std::vector<CUdeviceptr> ptrs;
  for (int i = 0; i < 4; ++i) {
    CUdeviceptr p = 0;
    ASSERT_CU(cuMemAlloc(&p, kQuota / 4));
    ptrs.push_back(p);
  }
  CUdeviceptr extra = 0;
  EXPECT_EQ(cuMemAlloc(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, 0u);
  ASSERT_CU(cuMemFree(ptrs.back()));
  ptrs.pop_back();
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, kQuota / 4);
  ASSERT_CU(cuMemAlloc(&extra, kQuota / 4));
  ptrs.push_back(extra);
  for (CUdeviceptr p : ptrs) ASSERT_CU(cuMemFree(p));
  ASSERT_CU(cuDevicePrimaryCtxRelease(dev));
}

}  // namespace
