// Helpers for the kernel corpus tests through rgpu: images built by nvcc,
// modules and device buffers as RAII types, launches through the driver API,
// random inputs and tolerance checks.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace rgpu::e2e {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

inline std::string read_image(const std::string& name) {
  std::ifstream f(std::string(RGPU_E2E_KERNEL_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A module loaded with cuModuleLoadData from a built image ("scan.fatbin",
// "reduce.ptx", "matmul.z.fatbin"). Owns the module; not thread-safe.
class Module {
 public:
  explicit Module(const std::string& image_name) : image_(read_image(image_name)) {
    EXPECT_FALSE(image_.empty()) << "image " << image_name << " was not built";
    if (image_.empty()) return;
    result_ = cuModuleLoadData(&module_, image_.data());
    EXPECT_EQ(result_, CUDA_SUCCESS) << "cuModuleLoadData(" << image_name << ")";
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() {
    if (module_) cuModuleUnload(module_);
  }
  bool ok() const { return module_ != nullptr; }
  CUresult load_result() const { return result_; }
  CUmodule get() const { return module_; }
  CUfunction function(const char* name) const {
    CUfunction f = nullptr;
    CUresult r = module_ ? cuModuleGetFunction(&f, module_, name) : CUDA_ERROR_INVALID_HANDLE;
    EXPECT_EQ(r, CUDA_SUCCESS) << "cuModuleGetFunction(" << name << ")";
    return f;
  }

 private:
  std::string image_;
  CUmodule module_ = nullptr;
  CUresult result_ = CUDA_ERROR_NOT_INITIALIZED;
};

// One device allocation holding `n` elements of T. Owns the memory; not
// thread-safe.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { EXPECT_EQ(cuMemAlloc(&ptr_, bytes()), CUDA_SUCCESS) << "cuMemAlloc"; }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) { upload(v); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cuMemFree(ptr_);
  }
  size_t bytes() const { return n_ * sizeof(T); }
  CUdeviceptr ptr() const { return ptr_; }
  void upload(const std::vector<T>& v) {
    ASSERT_EQ(v.size(), n_);
    ASSERT_EQ(cuMemcpyHtoD(ptr_, v.data(), bytes()), CUDA_SUCCESS);
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cuMemcpyDtoH(v.data(), ptr_, bytes()), CUDA_SUCCESS) << "cuMemcpyDtoH";
    return v;
  }

 private:
  size_t n_;
  CUdeviceptr ptr_ = 0;
};

// A grid or block shape; unset dimensions are 1. Plain value.
struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

// cuLaunchKernel with kernelParams pointing at each argument, on `stream`.
template <class... A>
CUresult launch_on(CUstream stream, CUfunction f, Dim grid, Dim block, unsigned shared, A... args) {
  void* params[sizeof...(A) + 1] = {static_cast<void*>(&args)..., nullptr};
  return cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, stream, params, nullptr);
}

template <class... A>
CUresult launch(CUfunction f, Dim grid, Dim block, A... args) {
  return launch_on(nullptr, f, grid, block, 0, args...);
}

template <class T>
std::vector<T> random_vector(size_t n, T lo, T hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = std::uniform_real_distribution<T>(lo, hi)(rng);
    } else {
      x = static_cast<T>(std::uniform_int_distribution<long long>(lo, hi)(rng));
    }
  }
  return v;
}

// |got - want| <= abs_tol + rel_tol * |want| for every element.
template <class T>
::testing::AssertionResult near_all(const std::vector<T>& got, const std::vector<T>& want, double rel_tol,
                                    double abs_tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= abs_tol + rel_tol * std::fabs(w)))
      return ::testing::AssertionFailure() << "index " << i << ": got " << g << " want " << w;
  }
  return ::testing::AssertionSuccess();
}

// The primary context of device 0, current on the calling thread for each test.
class KernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
  }
  void SetUp() override { ASSERT_CU(cuCtxSetCurrent(ctx_)); }
  void TearDown() override { EXPECT_CU(cuCtxSynchronize()); }

  static inline CUdevice dev_ = 0;
  static inline CUcontext ctx_ = nullptr;
};

}  // namespace rgpu::e2e
