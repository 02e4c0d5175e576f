// Tests of virtual memory management: reservations, physical chunks counted
// against the device's memory, mappings that copies and kernels may span,
// access, and what unmapping takes away.
#include <fstream>
#include <iterator>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceVmm = CpuDeviceTest;

CUmemAllocationProp device0() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

TEST_F(CpuDeviceVmm, ExpandableSegmentGrowsByMappedChunks) {
  CUmemAllocationProp prop = device0();
  size_t gran = 0;
  CU_OK(cu.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  ASSERT_EQ(2u << 20, gran);
  size_t free0 = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free0, &total));

  // Reserve more than the device holds: address space is not memory.
  CUdeviceptr base = 0;
  CU_OK(cu.cuMemAddressReserve(&base, 2 * total, 0, 0, 0));
  ASSERT_NE(0u, base);
  CUmemGenericAllocationHandle h[2];
  for (auto& x : h) CU_OK(cu.cuMemCreate(&x, gran, &prop, 0));
  size_t free1 = 0;
  CU_OK(cu.cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - 2 * gran, free1);
  CU_OK(cu.cuMemMap(base, gran, 0, h[0], 0));
  CU_OK(cu.cuMemMap(base + gran, gran, 0, h[1], 0));
  CUmemGenericAllocationHandle extra;
  CU_OK(cu.cuMemCreate(&extra, gran, &prop, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemMap(base, gran, 0, extra, 0));  // already mapped there
  CU_OK(cu.cuMemRelease(extra));
  // A chunk maps at one address at a time on the CPU device.
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuMemMap(base + 2 * gran, gran, 0, h[1], 0));
  // Mapped but not yet accessible: copies are refused.
  std::vector<int> host(1024, 3);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(base, host.data(), 4096));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(cu.cuMemSetAccess(base, 2 * gran, &access, 1));
  unsigned long long flags = 0;
  CU_OK(cu.cuMemGetAccess(&flags, &prop.location, base + gran));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, flags);

  // One copy across the boundary of the two chunks.
  CUdeviceptr across = base + gran - 2048;
  CU_OK(cu.cuMemcpyHtoD(across, host.data(), 4096));
  CU_OK(cu.cuMemsetD32(base + gran, 9, 16));
  std::vector<int> back(1024, 0);
  CU_OK(cu.cuMemcpyDtoH(back.data(), across, 4096));
  EXPECT_EQ(3, back[0]);
  EXPECT_EQ(9, back[512]);
  EXPECT_EQ(3, back[1023]);
  // Beyond the mapped chunks: refused.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(base + 2 * gran - 2048, host.data(), 4096));

  // The handle of a mapped address, and its properties.
  CUmemGenericAllocationHandle again = 0;
  CU_OK(cu.cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(base + gran + 100)));
  EXPECT_EQ(h[1], again);
  CUmemAllocationProp got{};
  CU_OK(cu.cuMemGetAllocationPropertiesFromHandle(&got, again));
  EXPECT_EQ(CU_MEM_ALLOCATION_TYPE_PINNED, got.type);
  EXPECT_EQ(0, got.location.id);
  CU_OK(cu.cuMemRelease(again));

  // Unmapping the second chunk shrinks the segment; releasing frees memory.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemUnmap(base + gran, gran / 2));  // splits a mapping
  CU_OK(cu.cuMemUnmap(base + gran, gran));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(back.data(), across, 4096));
  CU_OK(cu.cuMemcpyDtoH(back.data(), across, 2048));
  CU_OK(cu.cuMemRelease(h[1]));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemRelease(h[1]));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemAddressFree(base, 2 * total));  // still mapped
  // Released while mapped: freed once unmapped.
  CU_OK(cu.cuMemRelease(h[0]));
  CU_OK(cu.cuMemcpyDtoH(back.data(), base, 64));
  CU_OK(cu.cuMemUnmap(base, gran));
  size_t free2 = 0;
  CU_OK(cu.cuMemGetInfo(&free2, &total));
  EXPECT_EQ(free0, free2);
  CU_OK(cu.cuMemAddressFree(base, 2 * total));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemAddressFree(base, 2 * total));
}

TEST_F(CpuDeviceVmm, KernelsReachMappedChunksAndFaultBeyondThem) {
  std::ifstream in(RGPU_CPUDEV_TEST_FATBIN, std::ios::binary);
  std::vector<char> fatbin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CUmodule mod;
  CU_OK(cu.cuModuleLoadData(&mod, fatbin.data()));
  CUfunction add;
  CU_OK(cu.cuModuleGetFunction(&add, mod, "vec_add"));
  CUmemAllocationProp prop = device0();
  const size_t gran = 2u << 20;
  CUdeviceptr base;
  CU_OK(cu.cuMemAddressReserve(&base, 4 * gran, 0, 0, 0));
  CUmemGenericAllocationHandle h[2];
  for (int i = 0; i < 2; ++i) {
    CU_OK(cu.cuMemCreate(&h[i], gran, &prop, 0));
    CU_OK(cu.cuMemMap(base + i * gran, gran, 0, h[i], 0));
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(cu.cuMemSetAccess(base, 2 * gran, &access, 1));
  // Three float arrays of n elements, the middle one across the chunk boundary.
  const int n = 4096;
  CUdeviceptr a = base, b = base + gran - n * 2, c = base + gran + gran / 2;
  std::vector<float> ha(n, 1.5f), hb(n, 2.0f), hc(n, 0);
  CU_OK(cu.cuMemcpyHtoD(a, ha.data(), n * 4));
  CU_OK(cu.cuMemcpyHtoD(b, hb.data(), n * 4));
  int count = n;
  void* args[] = {&a, &b, &c, &count};
  CU_OK(cu.cuLaunchKernel(add, n / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cu.cuMemcpyDtoH(hc.data(), c, n * 4));
  for (int i = 0; i < n; ++i) ASSERT_EQ(3.5f, hc[i]) << i;
  // An output past the mapped chunks faults as an unmapped address does.
  CUdeviceptr past = base + 2 * gran - 1024;
  void* bad[] = {&a, &b, &past, &count};
  CU_OK(cu.cuLaunchKernel(add, n / 128, 1, 1, 128, 1, 1, 0, nullptr, bad, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());
}

}  // namespace
}  // namespace rgpu::cpudev::test
