// Tests of initialization, exports, devices, attributes and error strings.
#include <cstring>
#include <set>
#include <string>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

TEST(CpuDeviceExports, EveryVersionedNameResolves) {
  CudaLib& cu = lib();
  ASSERT_NE(nullptr, cu.handle);
  EXPECT_EQ("", cu.missing);
  for (const char* name :
       {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemGetInfo_v2", "cuCtxCreate_v4", "cuCtxDestroy_v2",
        "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuDeviceTotalMem_v2", "cuDeviceGetUuid_v2",
        "cuDeviceGetUuid", "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxSetFlags_v2",
        "cuDevicePrimaryCtxReset_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
        "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2",
        "cuMemsetD16_v2", "cuMemsetD32_v2", "cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async",
        "cuStreamDestroy_v2", "cuEventDestroy_v2", "cuEventElapsedTime_v2", "cuMemGetAddressRange_v2"}) {
    EXPECT_NE(nullptr, cu.sym(name)) << name;
  }
}

TEST(CpuDeviceExports, InternalSymbolsAreHidden) {
  CudaLib& cu = lib();
  // Unversioned aliases that libcuda.so.1 keeps only for old binaries and
  // the library's own C++ symbols must not be visible.
  for (const char* name : {"cuMemAlloc", "cuCtxCreate", "cuMemcpyHtoD", "_ZN4rgpu6cpudev10parse_sizeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
                           "_ZN4rgpu3log5writeENS0_5LevelEPKciS3_z"}) {
    EXPECT_EQ(nullptr, cu.sym(name)) << name;
  }
}

TEST(CpuDeviceInit, CallsBeforeCuInitAreNotInitialized) {
  CudaLib& cu = private_lib({});
  ASSERT_EQ("", cu.missing);
  int n = -1;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cu.cuDeviceGetCount(&n));
  CUdeviceptr p;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cu.cuMemAlloc(&p, 16));
  CUcontext c;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cu.cuCtxCreate(&c, nullptr, 0, 0));
  // Version and error strings work without cuInit, as in CUDA.
  int v = 0;
  EXPECT_EQ(CUDA_SUCCESS, cu.cuDriverGetVersion(&v));
  EXPECT_EQ(13000, v);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuInit(1));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuInit(0));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuInit(0));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuDeviceGetCount(&n));
  EXPECT_EQ(1, n);  // the default
}

TEST(CpuDeviceDevices, CountNameUuidMemory) {
  CudaLib& cu = lib();
  int n = 0;
  CU_OK(cu.cuDeviceGetCount(&n));
  ASSERT_EQ(2, n);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetCount(nullptr));
  CUdevice d = -1;
  CU_OK(cu.cuDeviceGet(&d, 1));
  EXPECT_EQ(1, d);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceGet(&d, 2));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceGet(&d, -1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGet(nullptr, 0));

  char name[64];
  CU_OK(cu.cuDeviceGetName(name, sizeof(name), 0));
  EXPECT_STREQ("rgpu CPU device 0", name);
  CU_OK(cu.cuDeviceGetName(name, sizeof(name), 1));
  EXPECT_STREQ("rgpu CPU device 1", name);
  char small[5];
  CU_OK(cu.cuDeviceGetName(small, sizeof(small), 0));
  EXPECT_STREQ("rgpu", small);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetName(nullptr, 10, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceGetName(name, sizeof(name), 5));

  CUuuid u0, u1, old;
  CU_OK(cu.cuDeviceGetUuid(&u0, 0));
  CU_OK(cu.cuDeviceGetUuid(&u1, 1));
  EXPECT_NE(0, std::memcmp(u0.bytes, u1.bytes, sizeof(u0.bytes)));
  auto v1 = reinterpret_cast<CUresult (*)(CUuuid*, CUdevice)>(cu.sym("cuDeviceGetUuid"));
  ASSERT_NE(nullptr, v1);
  CU_OK(v1(&old, 0));
  EXPECT_EQ(0, std::memcmp(u0.bytes, old.bytes, sizeof(u0.bytes)));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetUuid(nullptr, 0));

  size_t total = 0;
  CU_OK(cu.cuDeviceTotalMem(&total, 0));
  EXPECT_EQ(kDeviceMemory, total);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceTotalMem(&total, 7));
}

TEST(CpuDeviceDevices, EveryAttributeHasAValue) {
  CudaLib& cu = lib();
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = -12345;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), 0)) << a;
    EXPECT_NE(-12345, v) << a;
  }
  int v = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(0), 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(-3), 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 9));
}

TEST(CpuDeviceDevices, AttributesDescribeAComputeCapability8Device) {
  CudaLib& cu = lib();
  auto attr = [&](CUdevice_attribute a) {
    int v = -1;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDeviceGetAttribute(&v, a, 0));
    return v;
  };
  EXPECT_EQ(32, attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  EXPECT_EQ(1024, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  EXPECT_EQ(1024, attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X));
  EXPECT_EQ(64, attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z));
  EXPECT_EQ(2147483647, attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X));
  EXPECT_EQ(65535, attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y));
  EXPECT_EQ(48 * 1024, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  EXPECT_GT(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), 48 * 1024);
  EXPECT_EQ(65536, attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK));
  EXPECT_EQ(kThreads, attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  EXPECT_GT(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 0);
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING));
  EXPECT_EQ(8, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  EXPECT_EQ(CU_COMPUTEMODE_DEFAULT, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE));
}

TEST(CpuDeviceErrors, NamesAndStrings) {
  CudaLib& cu = lib();
  const char* s = nullptr;
  CU_OK(cu.cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
  EXPECT_STREQ("CUDA_ERROR_INVALID_VALUE", s);
  CU_OK(cu.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
  EXPECT_STREQ("CUDA_ERROR_ILLEGAL_ADDRESS", s);
  CU_OK(cu.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_STREQ("out of memory", s);
  CU_OK(cu.cuGetErrorName(CUDA_SUCCESS, &s));
  EXPECT_STREQ("CUDA_SUCCESS", s);
  s = reinterpret_cast<const char*>(0x1);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGetErrorName(static_cast<CUresult>(12345), &s));
  EXPECT_EQ(nullptr, s);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGetErrorString(static_cast<CUresult>(-1), &s));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGetErrorName(CUDA_SUCCESS, nullptr));
}

}  // namespace
}  // namespace rgpu::cpudev::test
