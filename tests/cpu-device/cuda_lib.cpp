// Loading of the CPU device library for the tests.
#include "cuda_lib.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

namespace rgpu::cpudev::test {

namespace {

void resolve(CudaLib& l) {
#define RGPU_TEST_RESOLVE(name)                                                        \
  l.name = reinterpret_cast<decltype(l.name)>(dlsym(l.handle, RGPU_TEST_STR(name)));  \
  if (!l.name) l.missing += std::string(RGPU_TEST_STR(name)) + " ";
  RGPU_TEST_FUNCTIONS(RGPU_TEST_RESOLVE)
#undef RGPU_TEST_RESOLVE
}

std::mutex g_mu;

}  // namespace

void* CudaLib::sym(const char* name) const { return dlsym(handle, name); }

CudaLib& lib() {
  static CudaLib* shared = [] {
    setenv("RGPU_CPU_DEVICES", "2", 1);
    setenv("RGPU_CPU_DEVICE_MEMORY", "64M", 1);
    setenv("RGPU_CPU_THREADS", "3", 1);
    unsetenv("RGPU_CPU_STREAM_WORKERS");
    auto* l = new CudaLib();  // lives for the process, like the loaded library
    l->handle = dlopen(RGPU_CPUDEV_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (l->handle) {
      resolve(*l);
      if (l->cuInit) l->cuInit(0);
    }
    return l;
  }();
  return *shared;
}

CudaLib& private_lib(const std::map<std::string, std::string>& env) {
  std::lock_guard lock(g_mu);
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rgpu-cpudev-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path copy = dir / ("librgpu-cpudev-" + std::to_string(counter++) + ".so");
  fs::copy_file(RGPU_CPUDEV_LIBRARY, copy, fs::copy_options::overwrite_existing);
  for (const char* k : {"RGPU_CPU_DEVICES", "RGPU_CPU_DEVICE_MEMORY", "RGPU_CPU_THREADS", "RGPU_CPU_STREAM_WORKERS",
                        "RGPU_CPU_WORKER_NICE"}) {
    unsetenv(k);
  }
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  static std::vector<std::unique_ptr<CudaLib>> loaded;  // never unloaded: see CudaLib
  loaded.push_back(std::make_unique<CudaLib>());
  CudaLib* l = loaded.back().get();
  l->handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (l->handle) resolve(*l);
  fs::remove(copy);  // the mapping stays valid
  std::error_code ec;
  fs::remove(dir, ec);
  // The environment is read at cuInit: the caller runs cuInit before it
  // loads another instance.
  return *l;
}

void CpuDeviceTest::SetUp() {
  ASSERT_NE(nullptr, cu.handle) << dlerror();
  ASSERT_EQ("", cu.missing);
  CU_OK(cu.cuCtxCreate(&ctx, nullptr, 0, 0));
}

void CpuDeviceTest::TearDown() {
  if (ctx) {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxDestroy(ctx));
  }
}

}  // namespace rgpu::cpudev::test
