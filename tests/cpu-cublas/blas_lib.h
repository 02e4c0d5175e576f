// Test helper: loads the CPU stand-in for cuBLAS/cuBLASLt next to the CPU
// device and resolves its entry points by name, as rgpud does; device buffers
// and a naive reference GEMM for the checks.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <complex>
#include <cstdint>
#include <vector>

#include "../cpu-device/cuda_lib.h"

namespace rgpu::cpublas::test {

// Every name the stand-in exports (cpu-libs/cublas/exports.map), with
// RGPU_CUBLAS_TEST_OVERLOADED below.
#define RGPU_CUBLAS_TEST_FUNCTIONS(X)                                                                              \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasGetVersion_v2) X(cublasGetProperty) X(cublasSetWorkspace_v2)     \
  X(cublasSetStream_v2) X(cublasGetStream_v2) X(cublasGetPointerMode_v2) X(cublasSetPointerMode_v2)               \
  X(cublasGetAtomicsMode) X(cublasSetAtomicsMode) X(cublasGetMathMode) X(cublasSetMathMode)                       \
  X(cublasGetStatusName) X(cublasGetStatusString)                                                                 \
  X(cublasSgemm_v2) X(cublasSgemm_v2_64) X(cublasDgemm_v2) X(cublasDgemm_v2_64) X(cublasCgemm_v2)                 \
  X(cublasCgemm_v2_64) X(cublasZgemm_v2) X(cublasZgemm_v2_64)                                                     \
  X(cublasSgemmStridedBatched) X(cublasSgemmStridedBatched_64) X(cublasDgemmStridedBatched)                       \
  X(cublasDgemmStridedBatched_64) X(cublasCgemmStridedBatched) X(cublasCgemmStridedBatched_64)                    \
  X(cublasZgemmStridedBatched) X(cublasZgemmStridedBatched_64)                                                    \
  X(cublasGemmEx_64) X(cublasGemmStridedBatchedEx_64)               \
  X(cublasSgemmEx) X(cublasSgemmEx_64)                                                                            \
  X(cublasSgemv_v2) X(cublasSgemv_v2_64) X(cublasDgemv_v2) X(cublasDgemv_v2_64) X(cublasCgemv_v2)                 \
  X(cublasCgemv_v2_64) X(cublasZgemv_v2) X(cublasZgemv_v2_64)                                                     \
  X(cublasSdot_v2) X(cublasSdot_v2_64) X(cublasDdot_v2) X(cublasDdot_v2_64) X(cublasCdotu_v2)                     \
  X(cublasCdotu_v2_64) X(cublasCdotc_v2) X(cublasCdotc_v2_64) X(cublasZdotu_v2) X(cublasZdotu_v2_64)              \
  X(cublasZdotc_v2) X(cublasZdotc_v2_64)                                                                          \
  X(cublasStrsm_v2) X(cublasDtrsm_v2) X(cublasStrsmBatched) X(cublasDtrsmBatched) X(cublasSgetrfBatched)           \
  X(cublasDgetrfBatched) X(cublasSgetrsBatched) X(cublasDgetrsBatched) X(cublasSgeqrfBatched)                     \
  X(cublasDgeqrfBatched) X(cublasSgelsBatched) X(cublasDgelsBatched)                                              \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetProperty) X(cublasLtGetStatusName)      \
  X(cublasLtGetStatusString) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                         \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatrixLayoutGetAttribute) X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulDescGetAttribute)                \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)    \
  X(cublasLtMatmulPreferenceGetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

// Names that cublas_api.h also overloads inline for C++ (a cudaDataType
// compute type): the exported prototype, taken from the _64 form's shape.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                                    void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                  int, const void*, const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long, const void*, void*,
                                                  cudaDataType, int, long long, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);
#define RGPU_CUBLAS_TEST_OVERLOADED(X) X(cublasGemmEx, GemmExFn) X(cublasGemmStridedBatchedEx, GemmStridedBatchedExFn)

// The loaded stand-in. Lifetime: the process. Thread-compatible.
struct BlasLib {
#define RGPU_BLAS_MEMBER(name) decltype(&::name) name = nullptr;
  RGPU_CUBLAS_TEST_FUNCTIONS(RGPU_BLAS_MEMBER)
#undef RGPU_BLAS_MEMBER
#define RGPU_BLAS_MEMBER(name, type) type name = nullptr;
  RGPU_CUBLAS_TEST_OVERLOADED(RGPU_BLAS_MEMBER)
#undef RGPU_BLAS_MEMBER
  void* handle = nullptr;
  std::string missing;
};

// The stand-in, loaded once after the CPU device (cpudev::test::lib()).
BlasLib& blas();

// A CPU device test with a cuBLAS handle on the context's legacy stream.
class BlasTest : public cpudev::test::CpuDeviceTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A device allocation filled with `bytes` of `data`; freed at TearDown.
  CUdeviceptr upload(const void* data, size_t bytes);
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    return upload(v.data(), v.size() * sizeof(T));
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    return v;
  }

  BlasLib& b = blas();
  cublasHandle_t h = nullptr;
  std::vector<CUdeviceptr> allocations_;
};

// C = alpha op(A) op(B) + beta C in double (complex<double>), column major;
// beta == 0 ignores C. Also returns, per element, alpha * sum |a||b| + |beta c|,
// the scale the tolerances are relative to.
void reference_gemm(char op_a, char op_b, int m, int n, int k, std::complex<double> alpha,
                    const std::vector<std::complex<double>>& a, int lda, const std::vector<std::complex<double>>& b,
                    int ldb, std::complex<double> beta, std::vector<std::complex<double>>& c, int ldc,
                    std::vector<double>* scale);

}  // namespace rgpu::cpublas::test

#define BLAS_OK(expr) ASSERT_EQ(CUBLAS_STATUS_SUCCESS, (expr))
