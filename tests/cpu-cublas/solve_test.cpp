// Triangular solves and the batched LU, QR and least squares: results against
// systems with known solutions; arrays of matrix pointers read from device
// memory, and a pointer in them that is no device memory refused.
#include <cmath>

#include "blas_lib.h"

namespace rgpu::cpublas::test {
namespace {

using SolveTest = BlasTest;

void expect_near(const std::vector<double>& want, const std::vector<double>& got, double tol = 1e-12) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(want[i], got[i], tol) << i;
}

TEST_F(SolveTest, TrsmLowerLeft) {
  // L = [2 0; 1 4] (column major), B = L * [1 2; 3 4] = [2 4; 13 18].
  std::vector<double> l = {2, 1, 0, 4}, bm = {2, 13, 4, 18};
  CUdeviceptr dl = upload(l), db = upload(bm);
  double one = 1;
  BLAS_OK(b.cublasDtrsm_v2(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 2, 2, &one,
                           reinterpret_cast<double*>(dl), 2, reinterpret_cast<double*>(db), 2));
  expect_near({1, 3, 2, 4}, download<double>(db, 4));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasDtrsm_v2(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 2, 2,
                             &one, reinterpret_cast<double*>(dl), 1, reinterpret_cast<double*>(db), 2));  // lda < m
}

TEST_F(SolveTest, BatchedLuSolvesEachSystem) {
  // A0 = [4 3; 6 3], A1 = [1 2; 3 4]; x = (1, 2) for both: b0 = (10, 12), b1 = (5, 11).
  std::vector<double> a0 = {4, 6, 3, 3}, a1 = {1, 3, 2, 4}, b0 = {10, 12}, b1 = {5, 11};
  CUdeviceptr da0 = upload(a0), da1 = upload(a1), db0 = upload(b0), db1 = upload(b1);
  CUdeviceptr as = upload(std::vector<uint64_t>{da0, da1}), bs = upload(std::vector<uint64_t>{db0, db1});
  CUdeviceptr piv = upload(std::vector<int>(4, 0)), info = upload(std::vector<int>(2, -1));
  BLAS_OK(b.cublasDgetrfBatched(h, 2, reinterpret_cast<double* const*>(as), 2, reinterpret_cast<int*>(piv),
                                reinterpret_cast<int*>(info), 2));
  EXPECT_EQ((std::vector<int>{0, 0}), download<int>(info, 2));
  int host_info = -1;
  BLAS_OK(b.cublasDgetrsBatched(h, CUBLAS_OP_N, 2, 1, reinterpret_cast<const double* const*>(as), 2,
                                reinterpret_cast<const int*>(piv), reinterpret_cast<double* const*>(bs), 2, &host_info,
                                2));
  EXPECT_EQ(0, host_info);
  expect_near({1, 2}, download<double>(db0, 2));
  expect_near({1, 2}, download<double>(db1, 2));
  // A singular matrix: its info names the zero pivot; without pivots (P NULL)
  // the LU is computed in place.
  CUdeviceptr ds = upload(std::vector<double>{1, 2, 2, 4});
  CUdeviceptr ss = upload(std::vector<uint64_t>{ds});
  BLAS_OK(b.cublasDgetrfBatched(h, 2, reinterpret_cast<double* const*>(ss), 2, nullptr, reinterpret_cast<int*>(info),
                                1));
  EXPECT_EQ(2, download<int>(info, 1)[0]);
}

TEST_F(SolveTest, APointerInsideTheArrayThatIsNoDeviceMemoryIsRefused) {
  std::vector<double> a0 = {4, 6, 3, 3};
  std::vector<double> on_host = {1, 0, 0, 1};
  CUdeviceptr da0 = upload(a0), info = upload(std::vector<int>(2, 0));
  CUdeviceptr as = upload(std::vector<uint64_t>{da0, reinterpret_cast<uint64_t>(on_host.data())});
  EXPECT_EQ(CUBLAS_STATUS_EXECUTION_FAILED,
            b.cublasDgetrfBatched(h, 2, reinterpret_cast<double* const*>(as), 2, nullptr,
                                  reinterpret_cast<int*>(info), 2));
  // A matrix that runs past its allocation.
  CUdeviceptr tiny = upload(std::vector<double>{1});
  CUdeviceptr ts = upload(std::vector<uint64_t>{tiny});
  int host_info = 0;
  EXPECT_EQ(CUBLAS_STATUS_EXECUTION_FAILED,
            b.cublasDgeqrfBatched(h, 2, 2, reinterpret_cast<double* const*>(ts), 2,
                                  reinterpret_cast<double* const*>(ts), &host_info, 1));
  // The array itself outside device memory.
  std::vector<uint64_t> host_array = {da0};
  EXPECT_NE(CUBLAS_STATUS_SUCCESS, b.cublasDgetrfBatched(h, 2, reinterpret_cast<double* const*>(host_array.data()), 2,
                                                         nullptr, reinterpret_cast<int*>(info), 1));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  expect_near(a0, download<double>(da0, 4), 0);  // untouched
}

TEST_F(SolveTest, BatchedQrAndLeastSquares) {
  // A = [1 0; 0 1; 1 1] (3x2), c = A (1, 2) + r with r orthogonal to A's columns.
  std::vector<float> a = {1, 0, 1, 0, 1, 1}, c = {1 + 1, 2 + 1, 3 - 1};
  CUdeviceptr da = upload(a), dc = upload(c);
  CUdeviceptr as = upload(std::vector<uint64_t>{da}), cs = upload(std::vector<uint64_t>{dc});
  CUdeviceptr dev_info = upload(std::vector<int>(1, -1));
  int info = -1;
  BLAS_OK(b.cublasSgelsBatched(h, CUBLAS_OP_N, 3, 2, 1, reinterpret_cast<float* const*>(as), 3,
                               reinterpret_cast<float* const*>(cs), 3, &info, reinterpret_cast<int*>(dev_info), 1));
  EXPECT_EQ(0, info);
  auto x = download<float>(dc, 2);
  EXPECT_NEAR(1.0f, x[0], 1e-5f);
  EXPECT_NEAR(2.0f, x[1], 1e-5f);
  EXPECT_EQ(0, download<int>(dev_info, 1)[0]);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasSgelsBatched(h, CUBLAS_OP_T, 3, 2, 1, reinterpret_cast<float* const*>(as), 3,
                                 reinterpret_cast<float* const*>(cs), 3, &info, nullptr, 1));
  EXPECT_EQ(-1, info);
  // QR of [3 0; 4 5]: |R11| = |(3, 4)| = 5, and |R22| = |det| / 5 = 3.
  CUdeviceptr dq = upload(std::vector<float>{3, 4, 0, 5}), tau = upload(std::vector<float>(2, 0));
  CUdeviceptr qs = upload(std::vector<uint64_t>{dq}), ts = upload(std::vector<uint64_t>{tau});
  BLAS_OK(b.cublasSgeqrfBatched(h, 2, 2, reinterpret_cast<float* const*>(qs), 2, reinterpret_cast<float* const*>(ts),
                                &info, 1));
  auto r = download<float>(dq, 4);
  EXPECT_NEAR(5.0f, std::fabs(r[0]), 1e-5f);
  EXPECT_NEAR(3.0f, std::fabs(r[3]), 1e-5f);
}

}  // namespace
}  // namespace rgpu::cpublas::test
