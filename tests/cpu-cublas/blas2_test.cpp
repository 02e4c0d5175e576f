// gemv and dot: operations, increments (positive, negative), pointer modes.
#include "blas_lib.h"

namespace rgpu::cpublas::test {
namespace {

using Blas2Test = BlasTest;

// y = alpha op(A) x + beta y, A 3x2 (lda 4), with x and y strided.
TEST_F(Blas2Test, SgemvBothOperationsWithIncrements) {
  const std::vector<float> a = {1, 2, 3, 99, 4, 5, 6, 99};  // columns (1,2,3) and (4,5,6)
  CUdeviceptr da = upload(a);
  float alpha = 2, beta = 1;
  {
    std::vector<float> x = {1, -7, 10}, y = {1, -7, 1, -7, 1};  // x = (1, 10) at inc 2; y = (1, 1, 1) at inc 2
    CUdeviceptr dx = upload(x), dy = upload(y);
    BLAS_OK(b.cublasSgemv_v2(h, CUBLAS_OP_N, 3, 2, &alpha, reinterpret_cast<float*>(da), 4,
                             reinterpret_cast<float*>(dx), 2, &beta, reinterpret_cast<float*>(dy), 2));
    // A x = (41, 52, 63); 2 A x + y
    EXPECT_EQ((std::vector<float>{83, -7, 105, -7, 127}), download<float>(dy, 5));
  }
  {
    std::vector<float> x = {3, 2, 1}, y = {0, 0};  // negative incx: x is read backwards as (1, 2, 3)
    CUdeviceptr dx = upload(x), dy = upload(y);
    float zero = 0;
    BLAS_OK(b.cublasSgemv_v2(h, CUBLAS_OP_T, 3, 2, &alpha, reinterpret_cast<float*>(da), 4,
                             reinterpret_cast<float*>(dx), -1, &zero, reinterpret_cast<float*>(dy), 1));
    EXPECT_EQ((std::vector<float>{28, 64}), download<float>(dy, 2));  // 2 A^T (1,2,3)
  }
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasSgemv_v2(h, CUBLAS_OP_N, 3, 2, &alpha, reinterpret_cast<float*>(da),
                                                          2, nullptr, 1, &beta, nullptr, 1));  // lda < m
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasSgemv_v2(h, CUBLAS_OP_N, 3, 2, &alpha, reinterpret_cast<float*>(da),
                                                          4, nullptr, 0, &beta, nullptr, 1));  // incx == 0
}

TEST_F(Blas2Test, DgemvAndZgemvConjugate) {
  std::vector<double> a = {1, 2, 3, 4}, x = {1, 1}, y = {0, 0};
  CUdeviceptr da = upload(a), dx = upload(x), dy = upload(y);
  double one = 1, zero = 0;
  BLAS_OK(b.cublasDgemv_v2(h, CUBLAS_OP_N, 2, 2, &one, reinterpret_cast<double*>(da), 2,
                           reinterpret_cast<double*>(dx), 1, &zero, reinterpret_cast<double*>(dy), 1));
  EXPECT_EQ((std::vector<double>{4, 6}), download<double>(dy, 2));
  std::vector<cuDoubleComplex> za = {{0, 1}}, zx = {{2, 0}}, zy = {{5, 5}};
  CUdeviceptr dza = upload(za), dzx = upload(zx), dzy = upload(zy);
  cuDoubleComplex zone = {1, 0}, zzero = {0, 0};
  BLAS_OK(b.cublasZgemv_v2(h, CUBLAS_OP_C, 1, 1, &zone, reinterpret_cast<cuDoubleComplex*>(dza), 1,
                           reinterpret_cast<cuDoubleComplex*>(dzx), 1, &zzero, reinterpret_cast<cuDoubleComplex*>(dzy),
                           1));
  auto got = download<cuDoubleComplex>(dzy, 1);
  EXPECT_EQ(0.0, got[0].x);  // conj(i) * 2 = -2i
  EXPECT_EQ(-2.0, got[0].y);
}

TEST_F(Blas2Test, DotHostAndDevicePointerModes) {
  std::vector<float> x = {1, 2, 3, 4}, y = {4, 3, 2, 1};
  CUdeviceptr dx = upload(x), dy = upload(y);
  float r = 0;
  BLAS_OK(b.cublasSdot_v2(h, 4, reinterpret_cast<float*>(dx), 1, reinterpret_cast<float*>(dy), 1, &r));
  EXPECT_EQ(20.0f, r);  // host mode: the call waited
  BLAS_OK(b.cublasSdot_v2(h, 2, reinterpret_cast<float*>(dx), 2, reinterpret_cast<float*>(dy), -2, &r));
  EXPECT_EQ(1.0f * 2 + 3.0f * 4, r);  // x = (1, 3); y backwards = (2, 4)
  BLAS_OK(b.cublasSdot_v2(h, 0, nullptr, 1, nullptr, 1, &r));
  EXPECT_EQ(0.0f, r);

  std::vector<double> dxv = {1, 2}, dyv = {3, 4}, res = {-1};
  CUdeviceptr ddx = upload(dxv), ddy = upload(dyv), dres = upload(res);
  BLAS_OK(b.cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
  BLAS_OK(b.cublasDdot_v2(h, 2, reinterpret_cast<double*>(ddx), 1, reinterpret_cast<double*>(ddy), 1,
                          reinterpret_cast<double*>(dres)));
  CU_OK(cu.cuCtxSynchronize());
  EXPECT_EQ(std::vector<double>{11}, download<double>(dres, 1));
}

TEST_F(Blas2Test, ComplexDotConjugatesX) {
  std::vector<cuComplex> x = {{1, 1}}, y = {{1, 1}};
  CUdeviceptr dx = upload(x), dy = upload(y);
  cuComplex r{};
  BLAS_OK(b.cublasCdotc_v2(h, 1, reinterpret_cast<cuComplex*>(dx), 1, reinterpret_cast<cuComplex*>(dy), 1, &r));
  EXPECT_EQ(2.0f, r.x);  // (1 - i)(1 + i)
  EXPECT_EQ(0.0f, r.y);
  BLAS_OK(b.cublasCdotu_v2(h, 1, reinterpret_cast<cuComplex*>(dx), 1, reinterpret_cast<cuComplex*>(dy), 1, &r));
  EXPECT_EQ(0.0f, r.x);  // (1 + i)^2 = 2i
  EXPECT_EQ(2.0f, r.y);
}

}  // namespace
}  // namespace rgpu::cpublas::test
