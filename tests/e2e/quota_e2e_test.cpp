// End to end: a program run with RGPU_REQUEST="mem=64M" (set by ctest) sees
// a 64 MiB device through the ordinary driver API and can allocate exactly
// that much.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
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

// A context on device 0 of the session, with its 64 MiB quota.
class QuotaPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("RGPU_REQUEST"), nullptr) << "run by ctest with RGPU_REQUEST=mem=64M";
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev_, 0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
    ASSERT_CU(cuCtxSetCurrent(ctx_));
  }
  void TearDown() override { cuDevicePrimaryCtxRelease(dev_); }
  size_t free_bytes() {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
    return free_bytes;
  }
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

// PTX whose .global array takes `bytes` of device memory when it loads.
std::string globals_ptx(size_t bytes) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n.visible .global .align 8 .b8 big[" +
         std::to_string(bytes) + "];\n.visible .entry touch(.param .u64 out)\n{\n  ret;\n}\n";
}

TEST_F(QuotaPaths, ModuleGlobalsCountAgainstTheQuota) {
  // 96 MiB of globals on a 64 MiB quota: refused at load, nothing held.
  CUmodule m = nullptr;
  const std::string too_big = globals_ptx(size_t{96} << 20);
  EXPECT_EQ(cuModuleLoadData(&m, too_big.c_str()), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(free_bytes(), kQuota);
  // 40 MiB loads and is held: the rest of the quota is what remains.
  const std::string fits = globals_ptx(size_t{40} << 20);
  ASSERT_CU(cuModuleLoadData(&m, fits.c_str()));
  const size_t left = free_bytes();
  EXPECT_LE(left, kQuota - (size_t{40} << 20));
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, size_t{32} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_CU(cuModuleUnload(m));
  EXPECT_EQ(free_bytes(), kQuota);
  ASSERT_CU(cuMemAlloc(&p, size_t{32} << 20));
  ASSERT_CU(cuMemFree(p));
}

TEST_F(QuotaPaths, VirtualMemoryChunksCountFromTheirCreation) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev_;
  size_t granularity = 0;
  ASSERT_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t chunk = ((size_t{48} << 20) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle h = 0;
  ASSERT_CU(cuMemCreate(&h, chunk, &prop, 0));
  // Created, not mapped: the chunk holds its memory all the same.
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, size_t{32} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemGenericAllocationHandle h2 = 0;
  EXPECT_EQ(cuMemCreate(&h2, chunk, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_CU(cuMemRelease(h));
  ASSERT_CU(cuMemAlloc(&p, size_t{32} << 20));
  ASSERT_CU(cuMemFree(p));
}

}  // namespace
