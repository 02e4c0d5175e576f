// NVML through rgpu: libnvidia-ml.so.1 (a name of librgpu.so) answers from
// the session's devices, and agrees with the driver API on every value both
// report. Run under `rgpu run --device cpu`.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "nvml/nvml_abi.h"

namespace {

// NVML's entry points, looked up in the library a program would dlopen.
struct Nvml {
  void* lib = dlopen(RGPU_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  template <typename F>
  F get(const char* name) {
    return reinterpret_cast<F>(lib ? dlsym(lib, name) : nullptr);
  }
  nvmlReturn_t (*init)() = get<nvmlReturn_t (*)()>("nvmlInit_v2");
  nvmlReturn_t (*shutdown)() = get<nvmlReturn_t (*)()>("nvmlShutdown");
  nvmlReturn_t (*count)(unsigned*) = get<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) =
      get<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) =
      get<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>("nvmlDeviceGetHandleByUUID");
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) =
      get<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>("nvmlDeviceGetHandleByPciBusId_v2");
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) =
      get<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) =
      get<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetUUID");
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned*) = get<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetIndex");
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*)>("nvmlDeviceGetMemoryInfo_v2");
  nvmlReturn_t (*capability)(nvmlDevice_t, int*, int*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>("nvmlDeviceGetPciInfo_v3");
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>("nvmlDeviceGetUtilizationRates");
  nvmlReturn_t (*cuda_version)(int*) = get<nvmlReturn_t (*)(int*)>("nvmlSystemGetCudaDriverVersion_v2");
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) =
      get<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature");
  const char* (*error_string)(nvmlReturn_t) = get<const char* (*)(nvmlReturn_t)>("nvmlErrorString");
};

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(nvml.lib, nullptr) << dlerror();
    ASSERT_NE(nvml.init, nullptr);
    ASSERT_EQ(nvml.init(), NVML_SUCCESS);
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS); }

  nvmlDevice_t device0() {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(nvml.by_index(0, &d), NVML_SUCCESS);
    return d;
  }

  Nvml nvml;
};

TEST_F(NvmlTest, SameLibraryObjectAsTheDriver) {
  // One object for every name: NVML's cuInit is the driver's.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(dlsym(driver, "nvmlInit_v2"), reinterpret_cast<void*>(nvml.init));
  dlclose(driver);
}

TEST_F(NvmlTest, CountAndNamesAgreeWithTheDriver) {
  unsigned count = 0;
  ASSERT_EQ(nvml.count(&count), NVML_SUCCESS);
  int cu_count = 0;
  ASSERT_EQ(cuDeviceGetCount(&cu_count), CUDA_SUCCESS);
  ASSERT_GE(cu_count, 1);
  EXPECT_EQ(count, static_cast<unsigned>(cu_count));

  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    ASSERT_EQ(nvml.by_index(i, &d), NVML_SUCCESS);
    unsigned index = 99;
    EXPECT_EQ(nvml.index(d, &index), NVML_SUCCESS);
    EXPECT_EQ(index, i);
    char name[96] = {}, cu_name[96] = {};
    ASSERT_EQ(nvml.name(d, name, sizeof name), NVML_SUCCESS);
    ASSERT_EQ(cuDeviceGetName(cu_name, sizeof cu_name, static_cast<CUdevice>(i)), CUDA_SUCCESS);
    EXPECT_STREQ(name, cu_name);
    int major = 0, minor = 0;
    ASSERT_EQ(nvml.capability(d, &major, &minor), NVML_SUCCESS);
    int cu_major = 0, cu_minor = 0;
    cuDeviceGetAttribute(&cu_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, static_cast<CUdevice>(i));
    cuDeviceGetAttribute(&cu_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, static_cast<CUdevice>(i));
    EXPECT_EQ(major, cu_major);
    EXPECT_EQ(minor, cu_minor);
  }
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvml.by_index(count, &d), NVML_ERROR_INVALID_ARGUMENT);
  int version = 0;
  ASSERT_EQ(nvml.cuda_version(&version), NVML_SUCCESS);
  int cu_version = 0;
  cuDriverGetVersion(&cu_version);
  EXPECT_EQ(version, cu_version);
}

TEST_F(NvmlTest, UuidIsTheDriversAndFindsTheDevice) {
  nvmlDevice_t d = device0();
  char text[80] = {};
  ASSERT_EQ(nvml.uuid(d, text, sizeof text), NVML_SUCCESS);
  CUuuid uuid{};
  ASSERT_EQ(cuDeviceGetUuid_v2(&uuid, 0), CUDA_SUCCESS);
  char expect[64];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(expect, sizeof expect, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  EXPECT_STREQ(text, expect);

  nvmlDevice_t found = nullptr;
  ASSERT_EQ(nvml.by_uuid(text, &found), NVML_SUCCESS);
  EXPECT_EQ(found, d);
  EXPECT_EQ(nvml.by_uuid("GPU-00000000-0000-0000-0000-000000000000", &found), NVML_ERROR_NOT_FOUND);

  char small[8];
  EXPECT_EQ(nvml.uuid(d, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
}

TEST_F(NvmlTest, PciBusIdRoundTrips) {
  nvmlDevice_t d = device0();
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvml.pci(d, &pci), NVML_SUCCESS);
  int bus = -1;
  cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0);
  EXPECT_EQ(pci.bus, static_cast<unsigned>(bus));
  EXPECT_EQ(std::strlen(pci.busId), 16u) << pci.busId;
  nvmlDevice_t found = nullptr;
  ASSERT_EQ(nvml.by_pci(pci.busId, &found), NVML_SUCCESS);
  EXPECT_EQ(found, d);
}

TEST_F(NvmlTest, MemoryFollowsTheSessionsAllocations) {
  nvmlDevice_t d = device0();
  size_t cu_total = 0;
  ASSERT_EQ(cuDeviceTotalMem_v2(&cu_total, 0), CUDA_SUCCESS);

  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  nvmlMemory_t before{};
  ASSERT_EQ(nvml.memory(d, &before), NVML_SUCCESS);
  EXPECT_EQ(before.total, cu_total);
  EXPECT_EQ(before.free + before.used, before.total);

  constexpr size_t kBytes = 64u << 20;
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, kBytes), CUDA_SUCCESS);
  nvmlMemory_t after{};
  ASSERT_EQ(nvml.memory(d, &after), NVML_SUCCESS);
  EXPECT_GE(after.used, before.used + kBytes);
  size_t cu_free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&cu_free, &total), CUDA_SUCCESS);
  EXPECT_EQ(after.free, cu_free);

  nvmlMemory_v2_t v2{};
  v2.version = rgpu::nvml::kMemoryV2Version;
  ASSERT_EQ(nvml.memory_v2(d, &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.total, cu_total);
  EXPECT_EQ(v2.free + v2.used + v2.reserved, v2.total);
  v2.version = 1;
  EXPECT_EQ(nvml.memory_v2(d, &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// The CPU device measures its utilization; rgpud answers it through its
// driver table (rgpuDeviceGetUtilization), with no context of the caller's.
TEST_F(NvmlTest, UtilizationIsAnsweredByTheServersDevice) {
  ASSERT_NE(nvml.utilization, nullptr);
  nvmlUtilization_t u{101, 101};
  ASSERT_EQ(nvml.utilization(device0(), &u), NVML_SUCCESS);
  EXPECT_LE(u.gpu, 100u);
  EXPECT_LE(u.memory, 100u);
  CUcontext current = reinterpret_cast<CUcontext>(&current);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, nullptr);  // the query's own context is popped again

  // Copies to the device count as memory activity, and a share is answered
  // while they ran (its value depends on the transport's share of the time).
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  constexpr size_t kBytes = 4u << 20;
  std::vector<char> host(kBytes, 7);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, kBytes), CUDA_SUCCESS);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(cuMemcpyHtoD_v2(p, host.data(), kBytes), CUDA_SUCCESS);
  ASSERT_EQ(nvml.utilization(device0(), &u), NVML_SUCCESS);
  EXPECT_LE(u.gpu, 100u);
  EXPECT_LE(u.memory, 100u);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx);  // the caller's context is current again
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);

  nvmlDevice_t bogus = reinterpret_cast<nvmlDevice_t>(&bogus);
  EXPECT_EQ(nvml.utilization(bogus, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.utilization(device0(), nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(NvmlTest, BadHandlesAndUnimplementedCallsAreAnswered) {
  nvmlDevice_t bogus = reinterpret_cast<nvmlDevice_t>(&bogus);
  char name[96];
  EXPECT_EQ(nvml.name(bogus, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.name(nullptr, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.count(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_NE(nvml.temperature, nullptr);
  unsigned t = 0;
  EXPECT_EQ(nvml.temperature(device0(), 0, &t), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_STREQ(nvml.error_string(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
}

TEST(NvmlInit, CallsBeforeInitAndAfterShutdownAreUninitialized) {
  Nvml nvml;
  ASSERT_NE(nvml.lib, nullptr);
  unsigned count = 0;
  EXPECT_EQ(nvml.count(&count), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);
  ASSERT_EQ(nvml.init(), NVML_SUCCESS);  // reference counted
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.count(&count), NVML_SUCCESS);
  EXPECT_EQ(nvml.shutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.shutdown(), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
