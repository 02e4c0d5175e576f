// Loading of the CPU stand-in for the tests, and the reference GEMM.
#include "blas_lib.h"

#include <dlfcn.h>

#include <cmath>

namespace rgpu::cpublas::test {

BlasLib& blas() {
  static BlasLib* shared = [] {
    cpudev::test::lib();  // the CPU device first: the stand-in's DT_NEEDED resolves to it
    auto* l = new BlasLib();  // lives for the process, like the loaded library
    l->handle = dlopen(RGPU_CPU_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (l->handle) {
#define RGPU_BLAS_RESOLVE(name)                                                \
  l->name = reinterpret_cast<decltype(l->name)>(dlsym(l->handle, #name));      \
  if (!l->name) l->missing += #name " ";
      RGPU_CUBLAS_TEST_FUNCTIONS(RGPU_BLAS_RESOLVE)
#define RGPU_BLAS_RESOLVE2(name, type) RGPU_BLAS_RESOLVE(name)
      RGPU_CUBLAS_TEST_OVERLOADED(RGPU_BLAS_RESOLVE2)
#undef RGPU_BLAS_RESOLVE2
#undef RGPU_BLAS_RESOLVE
    }
    return l;
  }();
  return *shared;
}

void BlasTest::SetUp() {
  CpuDeviceTest::SetUp();
  ASSERT_NE(nullptr, b.handle) << dlerror();
  ASSERT_EQ("", b.missing);
  BLAS_OK(b.cublasCreate_v2(&h));
}

void BlasTest::TearDown() {
  if (h) {
    EXPECT_EQ(CUBLAS_STATUS_SUCCESS, b.cublasDestroy_v2(h));
  }
  if (ctx) {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  }
  for (CUdeviceptr p : allocations_) cu.cuMemFree(p);
  CpuDeviceTest::TearDown();
}

CUdeviceptr BlasTest::upload(const void* data, size_t bytes) {
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, bytes));
  if (!p) return 0;
  allocations_.push_back(p);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyHtoD(p, data, bytes));
  return p;
}

void reference_gemm(char op_a, char op_b, int m, int n, int k, std::complex<double> alpha,
                    const std::vector<std::complex<double>>& a, int lda, const std::vector<std::complex<double>>& b,
                    int ldb, std::complex<double> beta, std::vector<std::complex<double>>& c, int ldc,
                    std::vector<double>* scale) {
  auto at = [&](int i, int l) {
    if (op_a == 'N') return a[size_t(l) * lda + i];
    auto v = a[size_t(i) * lda + l];
    return op_a == 'C' ? std::conj(v) : v;
  };
  auto bt = [&](int l, int j) {
    if (op_b == 'N') return b[size_t(j) * ldb + l];
    auto v = b[size_t(l) * ldb + j];
    return op_b == 'C' ? std::conj(v) : v;
  };
  if (scale) scale->assign(size_t(ldc) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      std::complex<double> sum = 0;
      double mag = 0;
      for (int l = 0; l < k; ++l) {
        sum += at(i, l) * bt(l, j);
        mag += std::abs(at(i, l)) * std::abs(bt(l, j));
      }
      auto& out = c[size_t(j) * ldc + i];
      double cmag = beta == 0.0 ? 0 : std::abs(beta * out);
      out = alpha * sum + (beta == 0.0 ? std::complex<double>(0) : beta * out);
      if (scale) (*scale)[size_t(j) * ldc + i] = std::abs(alpha) * mag + cmag;
    }
  }
}

}  // namespace rgpu::cpublas::test
