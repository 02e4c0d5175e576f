// Tests of device memory through the API: allocation, accounting, pointer
// queries, synchronous copies and memsets, and their error cases.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceMemory = CpuDeviceTest;

TEST_F(CpuDeviceMemory, AllocIsAlignedZeroedAndCounted) {
  size_t free0 = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free0, &total));
  EXPECT_EQ(kDeviceMemory, total);
  CUdeviceptr a = 0, b = 0;
  CU_OK(cu.cuMemAlloc(&a, 1000));
  CU_OK(cu.cuMemAlloc(&b, 1 << 20));
  EXPECT_EQ(0u, a % 256);
  EXPECT_EQ(0u, b % 256);
  EXPECT_TRUE(a + 1000 <= b || b + (1 << 20) <= a);  // disjoint
  std::vector<unsigned char> host(1000, 0xff);
  CU_OK(cu.cuMemcpyDtoH(host.data(), a, host.size()));
  for (unsigned char c : host) ASSERT_EQ(0, c);
  size_t free1 = 0;
  CU_OK(cu.cuMemGetInfo(&free1, &total));
  EXPECT_LE(free1, free0 - (1 << 20) - 1000);
  CU_OK(cu.cuMemFree(a));
  CU_OK(cu.cuMemFree(b));
  size_t free2 = 0;
  CU_OK(cu.cuMemGetInfo(&free2, &total));
  EXPECT_EQ(free0, free2);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemGetInfo(nullptr, &total));
}

TEST_F(CpuDeviceMemory, FreedMemoryIsZeroWhenReused) {
  CUdeviceptr a = 0;
  CU_OK(cu.cuMemAlloc(&a, 4096));
  CU_OK(cu.cuMemsetD8(a, 0xab, 4096));
  CU_OK(cu.cuMemFree(a));
  CUdeviceptr b = 0;
  CU_OK(cu.cuMemAlloc(&b, 4096));
  std::vector<unsigned char> host(4096, 1);
  CU_OK(cu.cuMemcpyDtoH(host.data(), b, host.size()));
  for (unsigned char c : host) ASSERT_EQ(0, c);
  CU_OK(cu.cuMemFree(b));
}

TEST_F(CpuDeviceMemory, InvalidAllocAndFree) {
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemAlloc(nullptr, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemAlloc(&p, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cu.cuMemAlloc(&p, kDeviceMemory + 1));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cu.cuMemAlloc(&p, SIZE_MAX));
  CU_OK(cu.cuMemAlloc(&p, 512));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(p + 16));  // not a base
  CU_OK(cu.cuMemFree(p));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(p));  // double free
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(0xdeadbeef000));
  int on_stack = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(reinterpret_cast<CUdeviceptr>(&on_stack)));
}

TEST_F(CpuDeviceMemory, OutOfMemoryThenRecovers) {
  std::vector<CUdeviceptr> blocks;
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < 100 && r == CUDA_SUCCESS; ++i) {
    CUdeviceptr p = 0;
    r = cu.cuMemAlloc(&p, 4 << 20);
    if (r == CUDA_SUCCESS) blocks.push_back(p);
  }
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, r);
  EXPECT_EQ(kDeviceMemory / (4 << 20), blocks.size());
  size_t free = 1, total = 0;
  CU_OK(cu.cuMemGetInfo(&free, &total));
  EXPECT_EQ(0u, free);
  CU_OK(cu.cuMemFree(blocks.back()));
  blocks.pop_back();
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4 << 20));
  blocks.push_back(p);
  for (CUdeviceptr b : blocks) CU_OK(cu.cuMemFree(b));
  // Freed neighbours coalesce: one allocation of everything fits again.
  CU_OK(cu.cuMemAlloc(&p, kDeviceMemory));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceMemory, AddressRangeAndPointerAttributes) {
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 3000));
  CUdeviceptr base = 0;
  size_t size = 0;
  CU_OK(cu.cuMemGetAddressRange(&base, &size, p + 2999));
  EXPECT_EQ(p, base);
  EXPECT_EQ(3000u, size);
  CU_OK(cu.cuMemGetAddressRange(nullptr, &size, p));
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cu.cuMemGetAddressRange(&base, &size, p + 3000));
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cu.cuMemGetAddressRange(&base, &size, 0x10));

  CUcontext owner = nullptr;
  CU_OK(cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p + 5));
  EXPECT_EQ(ctx, owner);
  unsigned int type = 0;
  CU_OK(cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
  EXPECT_EQ(static_cast<unsigned>(CU_MEMORYTYPE_DEVICE), type);
  CUdeviceptr dp = 0;
  CU_OK(cu.cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p + 7));
  EXPECT_EQ(p + 7, dp);
  CUdeviceptr start = 0;
  CU_OK(cu.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 100));
  EXPECT_EQ(p, start);
  size_t range = 0;
  CU_OK(cu.cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 100));
  EXPECT_EQ(3000u, range);
  int ordinal = -1;
  CU_OK(cu.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  EXPECT_EQ(0, ordinal);
  unsigned long long id1 = 0, id2 = 0;
  CU_OK(cu.cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
  CUdeviceptr q = 0;
  CU_OK(cu.cuMemAlloc(&q, 16));
  CU_OK(cu.cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
  EXPECT_NE(id1, id2);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_CONTEXT, p));
  int host = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, reinterpret_cast<CUdeviceptr>(&host)));
  CU_OK(cu.cuMemFree(p));
  CU_OK(cu.cuMemFree(q));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
}

TEST_F(CpuDeviceMemory, CopiesRoundTrip) {
  const size_t n = 100000;
  std::vector<uint8_t> src(n), dst(n, 0);
  std::iota(src.begin(), src.end(), 0);
  CUdeviceptr a = 0, b = 0;
  CU_OK(cu.cuMemAlloc(&a, n));
  CU_OK(cu.cuMemAlloc(&b, n));
  CU_OK(cu.cuMemcpyHtoD(a, src.data(), n));
  CU_OK(cu.cuMemcpyDtoD(b, a, n));
  CU_OK(cu.cuMemcpyDtoH(dst.data(), b, n));
  EXPECT_EQ(src, dst);
  // Unified cuMemcpy works out each side's kind from the address.
  std::vector<uint8_t> back(10, 0);
  CU_OK(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(back.data()), b + 100, 10));
  EXPECT_EQ(0, std::memcmp(back.data(), src.data() + 100, 10));
  CU_OK(cu.cuMemcpy(a, reinterpret_cast<CUdeviceptr>(back.data()), 10));
  CU_OK(cu.cuMemcpy(b, a, 10));
  CU_OK(cu.cuMemcpyDtoH(dst.data(), b, 10));
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data() + 100, 10));
  // Overlapping device-to-device copies behave like memmove.
  CU_OK(cu.cuMemcpyHtoD(a, src.data(), n));
  CU_OK(cu.cuMemcpyDtoD(a + 1, a, 1000));
  CU_OK(cu.cuMemcpyDtoH(dst.data(), a, 1001));
  EXPECT_EQ(0, std::memcmp(dst.data() + 1, src.data(), 1000));
  CU_OK(cu.cuMemFree(a));
  CU_OK(cu.cuMemFree(b));
}

TEST_F(CpuDeviceMemory, CopyRangesAreChecked) {
  std::vector<uint8_t> host(8192, 7);
  CUdeviceptr a = 0, b = 0;
  CU_OK(cu.cuMemAlloc(&a, 4096));
  CU_OK(cu.cuMemAlloc(&b, 4096));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(a, host.data(), 4097));      // past the end
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(a + 4000, host.data(), 97));  // straddles the end
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(host.data(), a + 1, SIZE_MAX));  // wraps around
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(host.data(), a, 8192));       // spans two allocations
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoD(a, b + 1, 4096));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(0x1000, host.data(), 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(a, nullptr, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(nullptr, a, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD8(a + 4095, 1, 2));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD32(a, 1, SIZE_MAX / 2));
  CU_OK(cu.cuMemcpyHtoD(a + 4000, host.data(), 96));  // exactly to the end
  CU_OK(cu.cuMemcpyHtoD(a, host.data(), 0));          // nothing to do
  CU_OK(cu.cuMemFree(a));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(a, host.data(), 16));  // freed
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoD(b, a, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD8(a, 0, 16));
  CU_OK(cu.cuMemFree(b));
}

TEST_F(CpuDeviceMemory, Memsets) {
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 64));
  std::vector<uint8_t> h(64);
  CU_OK(cu.cuMemsetD8(p, 0x5a, 64));
  CU_OK(cu.cuMemcpyDtoH(h.data(), p, 64));
  for (uint8_t c : h) ASSERT_EQ(0x5a, c);
  CU_OK(cu.cuMemsetD16(p + 2, 0x1234, 3));
  CU_OK(cu.cuMemsetD32(p + 16, 0xdeadbeef, 2));
  uint16_t w[4];
  CU_OK(cu.cuMemcpyDtoH(w, p, sizeof(w)));
  EXPECT_EQ(0x5a5a, w[0]);
  EXPECT_EQ(0x1234, w[1]);
  EXPECT_EQ(0x1234, w[3]);
  uint32_t d[3];
  CU_OK(cu.cuMemcpyDtoH(d, p + 16, sizeof(d)));
  EXPECT_EQ(0xdeadbeefu, d[0]);
  EXPECT_EQ(0xdeadbeefu, d[1]);
  EXPECT_EQ(0x5a5a5a5au, d[2]);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD16(p + 1, 0, 1));  // misaligned
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD32(p + 2, 0, 1));
  CU_OK(cu.cuMemFree(p));
}

TEST_F(CpuDeviceMemory, FreedPagesFaultInsteadOfReadingGarbage) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer runtime handles SIGSEGV itself";
#endif
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4096));
  CU_OK(cu.cuMemsetD8(p, 1, 4096));
  CU_OK(cu.cuMemFree(p));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    volatile unsigned char v = *reinterpret_cast<volatile unsigned char*>(p);
    (void)v;
    _exit(0);  // reached only if the stale read did not fault
  }
  int status = 0;
  ASSERT_EQ(pid, waitpid(pid, &status, 0));
  EXPECT_TRUE(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(SIGSEGV, WTERMSIG(status));
  }
}

TEST_F(CpuDeviceMemory, UsageIsDeviceWideAndContextDestroyFreesIt) {
  size_t free0 = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free0, &total));
  CUcontext other = nullptr;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CUdeviceptr p[3];
  for (auto& x : p) CU_OK(cu.cuMemAlloc(&x, 8 << 20));
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, 0));
  CU_OK(cu.cuCtxPopCurrent(nullptr));
  size_t free1 = 0;
  CU_OK(cu.cuMemGetInfo(&free1, &total));  // seen from the first context
  EXPECT_EQ(free0 - (24u << 20), free1);
  CU_OK(cu.cuCtxDestroy(other));
  size_t free2 = 0;
  CU_OK(cu.cuMemGetInfo(&free2, &total));
  EXPECT_EQ(free0, free2);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(p[0]));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamSynchronize(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventQuery(e));
}

TEST_F(CpuDeviceMemory, SecondDeviceHasItsOwnMemory) {
  CUcontext other = nullptr;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 1));
  CUdeviceptr on1 = 0;
  CU_OK(cu.cuMemAlloc(&on1, 1 << 20));
  int ordinal = -1;
  CU_OK(cu.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on1));
  EXPECT_EQ(1, ordinal);
  CU_OK(cu.cuCtxPopCurrent(nullptr));
  size_t free = 0, total = 0;
  CU_OK(cu.cuMemGetInfo(&free, &total));
  EXPECT_EQ(kDeviceMemory, free);  // device 0 is untouched
  // Unified addressing: device 1 memory can be copied from a device 0 context.
  CUdeviceptr on0 = 0;
  CU_OK(cu.cuMemAlloc(&on0, 16));
  CU_OK(cu.cuMemsetD8(on0, 9, 16));
  CU_OK(cu.cuMemcpyDtoD(on1, on0, 16));
  uint8_t h[16];
  CU_OK(cu.cuMemcpyDtoH(h, on1, 16));
  EXPECT_EQ(9, h[15]);
  CU_OK(cu.cuMemFree(on0));
  CU_OK(cu.cuCtxDestroy(other));
}

}  // namespace
}  // namespace rgpu::cpudev::test
