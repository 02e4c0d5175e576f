// The runtime API's surface without a server: names under the libcudart.so.13
// version, stubs, error names and strings, and per-thread last-error rules.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

TEST(Runtime, EveryRuntimeNameIsExportedUnderTheCudartVersion) {
  auto names = runtime_exported_names();
  ASSERT_EQ(names.size(), 422u);  // libcudart.so.13 of CUDA 13.0
  void* lib = library();
  ASSERT_NE(lib, nullptr);
  for (const auto& name : names) {
    EXPECT_NE(dlvsym(lib, name.c_str(), "libcudart.so.13"), nullptr) << name;
    EXPECT_EQ(dlvsym(lib, name.c_str(), "libcuda.so.1"), nullptr) << name;
  }
  // And the driver's names stay under their own node.
  EXPECT_NE(dlvsym(lib, "cuMemAlloc_v2", "libcuda.so.1"), nullptr);
  EXPECT_EQ(dlvsym(lib, "cuMemAlloc_v2", "libcudart.so.13"), nullptr);
}

TEST(Runtime, EveryCuda12NameIsExportedUnderItsOwnVersion) {
  auto names = runtime12_exported_names();
  ASSERT_EQ(names.size(), 416u);  // libcudart.so.12 of CUDA 12.4
  void* lib = library();
  ASSERT_NE(lib, nullptr);
  for (const auto& name : names) EXPECT_NE(dlvsym(lib, name.c_str(), "libcudart.so.12"), nullptr) << name;
  // A name only CUDA 13 has is not in 12's node, and the reverse.
  EXPECT_EQ(dlvsym(lib, "cudaStreamGetDevice", "libcudart.so.12"), nullptr);
  EXPECT_EQ(dlvsym(lib, "cudaGetDeviceProperties_v2", "libcudart.so.13"), nullptr);
  // No implementation symbol of its own is exported.
  EXPECT_EQ(dlsym(lib, "rgpu_cudart12_cudaGetDeviceProperties"), nullptr);
}

TEST(Runtime, StubReturnsNotSupported) {
  ASSERT_EQ(implemented_names().count("cudaGraphAddMemAllocNode"), 0u);
  auto stub = function<int (*)()>("cudaGraphAddMemAllocNode");
  ASSERT_NE(stub, nullptr);
  EXPECT_EQ(stub(), static_cast<int>(cudaErrorNotSupported));
  EXPECT_EQ(static_cast<int>(cudaErrorNotSupported), 801);
}

TEST(Runtime, ErrorNamesAndStrings) {
  auto name = function<const char* (*)(cudaError_t)>("cudaGetErrorName");
  auto text = function<const char* (*)(cudaError_t)>("cudaGetErrorString");
  ASSERT_NE(name, nullptr);
  ASSERT_NE(text, nullptr);
  EXPECT_STREQ(name(cudaSuccess), "cudaSuccess");
  EXPECT_STREQ(name(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(name(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
  EXPECT_STREQ(name(cudaErrorNotSupported), "cudaErrorNotSupported");
  EXPECT_STREQ(name(cudaErrorUnknown), "cudaErrorUnknown");
  EXPECT_NE(std::string(text(cudaErrorMemoryAllocation)).find("allocate"), std::string::npos);
  EXPECT_STREQ(name(static_cast<cudaError_t>(12345)), "unrecognized error code");
  EXPECT_STREQ(text(static_cast<cudaError_t>(-1)), "unrecognized error code");
  // Every value below 1000 either has a cudaError* name and a description or is unknown.
  int named = 0;
  for (int v = 0; v < 1000; ++v) {
    std::string n = name(static_cast<cudaError_t>(v));
    if (n == "unrecognized error code") continue;
    ++named;
    EXPECT_EQ(n.rfind("cuda", 0), 0u) << v;
    EXPECT_GT(std::strlen(text(static_cast<cudaError_t>(v))), 5u) << v;
  }
  EXPECT_GE(named, 100);
}

TEST(Runtime, LastErrorIsPerThreadAndClearedOnlyByGetLastError) {
  unsetenv("RGPU_SERVER");  // no server: initialisation fails with "no device"
  auto get_count = function<cudaError_t (*)(int*)>("cudaGetDeviceCount");
  auto get_last = function<cudaError_t (*)()>("cudaGetLastError");
  auto peek_last = function<cudaError_t (*)()>("cudaPeekAtLastError");
  auto malloc_fn = function<cudaError_t (*)(void**, size_t)>("cudaMalloc");
  ASSERT_TRUE(get_count && get_last && peek_last && malloc_fn);
  EXPECT_EQ(get_last(), cudaSuccess);
  int count = -1;
  EXPECT_EQ(get_count(&count), cudaErrorNoDevice);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(peek_last(), cudaErrorNoDevice);
  EXPECT_EQ(peek_last(), cudaErrorNoDevice);  // peeking keeps it
  cudaError_t other_thread = cudaErrorUnknown;
  std::thread([&] { other_thread = peek_last(); }).join();
  EXPECT_EQ(other_thread, cudaSuccess);  // errors belong to the thread that made them
  EXPECT_EQ(get_last(), cudaErrorNoDevice);
  EXPECT_EQ(get_last(), cudaSuccess);  // getting clears it
  // Invalid arguments are errors too, and the newest error wins.
  EXPECT_EQ(malloc_fn(nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(get_count(nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(get_last(), cudaErrorInvalidValue);
  EXPECT_EQ(get_last(), cudaSuccess);
}

TEST(Runtime, VersionsAndChannelDescriptions) {
  auto runtime_version = function<cudaError_t (*)(int*)>("cudaRuntimeGetVersion");
  ASSERT_NE(runtime_version, nullptr);
  int v = 0;
  EXPECT_EQ(runtime_version(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  EXPECT_EQ(runtime_version(nullptr), cudaErrorInvalidValue);
  auto channel = function<cudaChannelFormatDesc (*)(int, int, int, int, cudaChannelFormatKind)>(
      "cudaCreateChannelDesc");
  ASSERT_NE(channel, nullptr);
  cudaChannelFormatDesc d = channel(8, 16, 0, 32, cudaChannelFormatKindFloat);
  EXPECT_EQ(d.x, 8);
  EXPECT_EQ(d.y, 16);
  EXPECT_EQ(d.z, 0);
  EXPECT_EQ(d.w, 32);
  EXPECT_EQ(d.f, cudaChannelFormatKindFloat);
}

TEST(Runtime, CallConfigurationIsAStackPerThread) {
  using Push = unsigned (*)(dim3, dim3, size_t, void*);
  using Pop = cudaError_t (*)(dim3*, dim3*, size_t*, void*);
  auto push = function<Push>("__cudaPushCallConfiguration");
  auto pop = function<Pop>("__cudaPopCallConfiguration");
  ASSERT_TRUE(push && pop);
  EXPECT_EQ(push(dim3(4, 2, 1), dim3(128), 64, reinterpret_cast<void*>(0x2)), 0u);
  EXPECT_EQ(push(dim3(1), dim3(32), 0, nullptr), 0u);
  dim3 g, b;
  size_t shared = 1;
  void* stream = reinterpret_cast<void*>(0x99);
  ASSERT_EQ(pop(&g, &b, &shared, &stream), cudaSuccess);
  EXPECT_EQ(b.x, 32u);
  EXPECT_EQ(shared, 0u);
  EXPECT_EQ(stream, nullptr);
  ASSERT_EQ(pop(&g, &b, &shared, &stream), cudaSuccess);
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(b.x, 128u);
  EXPECT_EQ(shared, 64u);
  EXPECT_EQ(stream, reinterpret_cast<void*>(0x2));
  EXPECT_EQ(pop(&g, &b, &shared, &stream), cudaErrorMissingConfiguration);
}

}  // namespace
}  // namespace rgpu::shim::test
