// Test helper: loads librgpu-cpudev.so with dlopen and resolves the driver API
// by the symbol names cuda.h maps each function to, as rgpud does.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "rgpu/cpudev/extensions.h"

namespace rgpu::cpudev::test {

#define RGPU_TEST_STR2(x) #x
#define RGPU_TEST_STR(x) RGPU_TEST_STR2(x)

// Every function the CPU device exports (RGPU_CPUDEV_FUNCTIONS), by the
// names cuda.h maps to its symbols, and its extensions (RGPU_CPUDEV_EXTENSIONS),
// generated from api/driver.api (the lines marked cpu). cuda.h's
// macros turn each name into the versioned one (cuMemAlloc -> cuMemAlloc_v2),
// both for the member and for the string passed to dlsym.
#include "../../cpu-device/generated/api_functions.inc"
#define RGPU_TEST_FUNCTIONS(X) RGPU_CPUDEV_FUNCTIONS(X) RGPU_CPUDEV_EXTENSIONS(X)

// One loaded instance of the library. Lifetime: the process (instances are
// never unloaded, their worker threads may outlive a test). Thread-compatible.
struct CudaLib {
#define RGPU_TEST_MEMBER(name) decltype(&::name) name = nullptr;
  RGPU_TEST_FUNCTIONS(RGPU_TEST_MEMBER)
#undef RGPU_TEST_MEMBER
  void* handle = nullptr;
  std::string missing;  // names dlsym did not find

  // dlsym on this instance.
  void* sym(const char* name) const;
};

// The shared instance: the built library itself, loaded once with
// RGPU_CPU_DEVICES=2, RGPU_CPU_DEVICE_MEMORY=64M, RGPU_CPU_THREADS=3, and
// cuInit called.
CudaLib& lib();

// A private instance (a copy of the library file, so that it has its own
// state) loaded with exactly the RGPU_CPU_* variables of `env` set; cuInit is
// not called. Not thread-safe against other calls to lib()/private_lib().
CudaLib& private_lib(const std::map<std::string, std::string>& env);

constexpr size_t kDeviceMemory = 64u << 20;
constexpr int kThreads = 3;

// A test with a fresh context on device 0 current on the test thread.
class CpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  CudaLib& cu = lib();
  CUcontext ctx = nullptr;
};

}  // namespace rgpu::cpudev::test

#define CU_OK(expr) ASSERT_EQ(CUDA_SUCCESS, (expr))
