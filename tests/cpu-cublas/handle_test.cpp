// Handle management, versions, modes and status strings; the export list.
#include <dlfcn.h>

#include <cstring>

#include "blas_lib.h"

namespace rgpu::cpublas::test {
namespace {

using HandleTest = BlasTest;

TEST_F(HandleTest, ExportsExactlyTheImplementedNames) {
  // Every listed name resolved in SetUp; names it does not implement are
  // absent, so rgpud's table answers "not supported" for them.
  for (const char* name : {"cublasCtrsm_v2", "cublasCgetrfBatched", "cublasSgemmBatched", "cublasLtMatrixTransform",
                           "cublasCreate"}) {
    EXPECT_EQ(nullptr, dlsym(b.handle, name)) << name;
  }
}

TEST_F(HandleTest, VersionAndProperties) {
  int v = 0;
  BLAS_OK(b.cublasGetVersion_v2(h, &v));
  EXPECT_EQ(CUBLAS_VERSION, v);
  EXPECT_GE(v, 130000);
  int major = 0, minor = -1;
  BLAS_OK(b.cublasGetProperty(MAJOR_VERSION, &major));
  BLAS_OK(b.cublasGetProperty(MINOR_VERSION, &minor));
  EXPECT_EQ(13, major);
  EXPECT_EQ(CUBLAS_VER_MINOR, minor);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasGetProperty(MAJOR_VERSION, nullptr));
  EXPECT_EQ(size_t(CUBLAS_VERSION), b.cublasLtGetVersion());
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED, b.cublasGetVersion_v2(nullptr, &v));
}

TEST_F(HandleTest, ModesAndWorkspace) {
  cublasMath_t math;
  BLAS_OK(b.cublasGetMathMode(h, &math));
  EXPECT_EQ(CUBLAS_DEFAULT_MATH, math);
  BLAS_OK(b.cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  BLAS_OK(b.cublasGetMathMode(h, &math));
  EXPECT_EQ(CUBLAS_TF32_TENSOR_OP_MATH, math);
  BLAS_OK(b.cublasSetMathMode(
      h, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasSetMathMode(h, cublasMath_t(77)));
  cublasPointerMode_t mode;
  BLAS_OK(b.cublasGetPointerMode_v2(h, &mode));
  EXPECT_EQ(CUBLAS_POINTER_MODE_HOST, mode);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasSetPointerMode_v2(h, cublasPointerMode_t(5)));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasGetPointerMode_v2(h, nullptr));
  CUdeviceptr ws = 0;
  CU_OK(cu.cuMemAlloc(&ws, 1 << 16));
  BLAS_OK(b.cublasSetWorkspace_v2(h, reinterpret_cast<void*>(ws), 1 << 16));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasSetWorkspace_v2(h, nullptr, 16));
  BLAS_OK(b.cublasSetWorkspace_v2(h, nullptr, 0));
  CU_OK(cu.cuMemFree(ws));
  cublasAtomicsMode_t atomics;
  BLAS_OK(b.cublasGetAtomicsMode(h, &atomics));
  EXPECT_EQ(CUBLAS_ATOMICS_NOT_ALLOWED, atomics);
}

TEST_F(HandleTest, StatusNamesAndStrings) {
  EXPECT_STREQ("CUBLAS_STATUS_SUCCESS", b.cublasGetStatusName(CUBLAS_STATUS_SUCCESS));
  EXPECT_STREQ("CUBLAS_STATUS_NOT_SUPPORTED", b.cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED));
  EXPECT_STREQ("CUBLAS_STATUS_INVALID_VALUE", b.cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE));
  EXPECT_NE(0u, std::strlen(b.cublasGetStatusString(CUBLAS_STATUS_EXECUTION_FAILED)));
  EXPECT_STREQ("CUBLAS_STATUS_UNKNOWN", b.cublasGetStatusName(cublasStatus_t(12345)));
}

TEST_F(HandleTest, CreateNeedsAContext) {
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasCreate_v2(nullptr));
  CUcontext popped = nullptr;
  CU_OK(cu.cuCtxPopCurrent(&popped));
  cublasHandle_t other = nullptr;
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED, b.cublasCreate_v2(&other));
  cublasLtHandle_t lt = nullptr;
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED, b.cublasLtCreate(&lt));
  CU_OK(cu.cuCtxPushCurrent(popped));
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED, b.cublasDestroy_v2(nullptr));
}

// A handle computes in its own context even when another one is current.
TEST_F(HandleTest, GemmRunsInTheHandlesContext) {
  std::vector<float> a = {3};
  CUdeviceptr da = upload(a);
  CUcontext other = nullptr;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));  // now current
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, reinterpret_cast<float*>(da), 1,
                           reinterpret_cast<float*>(da), 1, &zero, reinterpret_cast<float*>(da), 1));
  CUcontext current = nullptr;
  CU_OK(cu.cuCtxGetCurrent(&current));
  EXPECT_EQ(other, current);
  CU_OK(cu.cuCtxDestroy(other));
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CU_OK(cu.cuCtxSynchronize());
  EXPECT_EQ(std::vector<float>{9}, download<float>(da, 1));
}

}  // namespace
}  // namespace rgpu::cpublas::test
