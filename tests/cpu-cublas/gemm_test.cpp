// The cuBLAS gemm family against a naive reference: every type, operation,
// alpha/beta, padded leading dimensions (gaps never written, NaN there never
// read), strided batches, the Ex forms in fp16/bf16, _64 forms and the
// argument checks.
#include <cmath>
#include <limits>

#include "blas_lib.h"
#include "convert.h"

namespace rgpu::cpublas::test {
namespace {

using cd = std::complex<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values that are exact in every type under test (multiples of 1/8 in [-1, 1]).
double pattern(int i, int salt) { return double((i * 37 + salt * 11) % 17 - 8) / 8.0; }

template <class T> struct Type;
template <> struct Type<float> {
  static float from(cd v) { return float(v.real()); }
  static cd to(float v) { return v; }
  static constexpr double tol = 1e-5;
  static constexpr bool complex = false;
};
template <> struct Type<double> {
  static double from(cd v) { return v.real(); }
  static cd to(double v) { return v; }
  static constexpr double tol = 1e-12;
  static constexpr bool complex = false;
};
template <> struct Type<cuComplex> {
  static cuComplex from(cd v) { return {float(v.real()), float(v.imag())}; }
  static cd to(cuComplex v) { return {v.x, v.y}; }
  static constexpr double tol = 1e-5;
  static constexpr bool complex = true;
};
template <> struct Type<cuDoubleComplex> {
  static cuDoubleComplex from(cd v) { return {v.real(), v.imag()}; }
  static cd to(cuDoubleComplex v) { return {v.x, v.y}; }
  static constexpr double tol = 1e-12;
  static constexpr bool complex = true;
};

cublasOperation_t op_of(char c) { return c == 'N' ? CUBLAS_OP_N : c == 'T' ? CUBLAS_OP_T : CUBLAS_OP_C; }

// A rows x cols matrix with ld = rows + pad; the gaps hold `gap`.
std::vector<cd> matrix(int rows, int cols, int ld, int salt, bool complex, cd gap) {
  std::vector<cd> v(size_t(ld) * cols, gap);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      v[size_t(j) * ld + i] = cd(pattern(j * rows + i, salt), complex ? pattern(j * rows + i, salt + 5) : 0.0);
    }
  }
  return v;
}

template <class T>
std::vector<T> as(const std::vector<cd>& v) {
  std::vector<T> out;
  for (cd x : v) out.push_back(Type<T>::from(x));
  return out;
}

class GemmTest : public BlasTest {
 protected:
  // One gemm of each shape through `call`, checked against the reference.
  template <class T, class Call>
  void check(char ta, char tb, cd alpha, cd beta, Call call) {
    SCOPED_TRACE(::testing::Message() << "op " << ta << tb << " alpha " << alpha << " beta " << beta);
    const int m = 5, n = 4, k = 3;
    const bool cx = Type<T>::complex;
    const int ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
    const int lda = ar + 2, ldb = br + 1, ldc = m + 3;
    auto a = matrix(ar, ac, lda, 1, cx, kNaN);
    auto bm = matrix(br, bc, ldb, 2, cx, kNaN);
    auto c = matrix(m, n, ldc, 3, cx, 7.0);
    CUdeviceptr da = upload(as<T>(a)), db = upload(as<T>(bm)), dc = upload(as<T>(c));
    T al = Type<T>::from(alpha), be = Type<T>::from(beta);
    BLAS_OK(call(h, op_of(ta), op_of(tb), m, n, k, &al, reinterpret_cast<const T*>(da), lda,
                 reinterpret_cast<const T*>(db), ldb, &be, reinterpret_cast<T*>(dc), ldc));
    std::vector<double> scale;
    auto want = c;
    reference_gemm(ta, tb, m, n, k, alpha, a, lda, bm, ldb, beta, want, ldc, &scale);
    auto got = download<T>(dc, c.size());
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < ldc; ++i) {
        size_t at = size_t(j) * ldc + i;
        cd g = Type<T>::to(got[at]);
        if (i >= m) {
          EXPECT_EQ(cd(7.0), g) << "gap written at " << i << "," << j;
          continue;
        }
        EXPECT_LE(std::abs(g - want[at]), Type<T>::tol * (scale[at] + 1e-30)) << i << "," << j << " got " << g
                                                                               << " want " << want[at];
      }
    }
  }

  template <class T, class Call>
  void check_all(Call call) {
    const char ops[] = {'N', 'T', 'C'};
    const cd scalars[][2] = {{1.0, 0.0}, {0.5, 2.0}, {-1.5, 1.0}, {cd(0.5, -1.0), cd(0.25, 0.5)}};
    for (char ta : ops) {
      for (char tb : ops) {
        for (auto& s : scalars) {
          if (!Type<T>::complex && s[0].imag() != 0) continue;
          check<T>(ta, tb, s[0], s[1], call);
        }
      }
    }
  }
};

TEST_F(GemmTest, SgemmAllOperationsAndScalars) { check_all<float>(b.cublasSgemm_v2); }
TEST_F(GemmTest, DgemmAllOperationsAndScalars) { check_all<double>(b.cublasDgemm_v2); }
TEST_F(GemmTest, CgemmAllOperationsAndScalars) { check_all<cuComplex>(b.cublasCgemm_v2); }
TEST_F(GemmTest, ZgemmAllOperationsAndScalars) { check_all<cuDoubleComplex>(b.cublasZgemm_v2); }

TEST_F(GemmTest, Sgemm64AndDgemm64) {
  check<float>('T', 'N', 1.25, 0.5, [&](auto... args) { return b.cublasSgemm_v2_64(args...); });
  check<double>('N', 'T', -0.5, 1.0, [&](auto... args) { return b.cublasDgemm_v2_64(args...); });
}

// Through GemmEx: float arrays, compute 32F, the same as Sgemm.
TEST_F(GemmTest, GemmExFp32) {
  auto call = [&](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* al,
                  const float* a, int lda, const float* bb, int ldb, const float* be, float* c, int ldc) {
    return b.cublasGemmEx(h, ta, tb, m, n, k, al, a, CUDA_R_32F, lda, bb, CUDA_R_32F, ldb, be, c, CUDA_R_32F, ldc,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  check_all<float>(call);
}

// fp16 / bf16 inputs, fp32 accumulate, output in the input type or in fp32.
struct HalfCase {
  cudaDataType ab, c;
  cublasComputeType_t compute;
  double tol;  // relative to alpha * sum |a||b| + |beta c|
};

class GemmHalfTest : public BlasTest, public ::testing::WithParamInterface<HalfCase> {};

uint16_t to_bits(double v, cudaDataType t) {
  return t == CUDA_R_16F ? float_to_half(float(v)) : float_to_bf16(float(v));
}
double from_bits(uint16_t v, cudaDataType t) { return t == CUDA_R_16F ? half_to_float(v) : bf16_to_float(v); }

TEST_P(GemmHalfTest, MatchesReference) {
  const HalfCase p = GetParam();
  for (char ta : {'N', 'T'}) {
    for (char tb : {'N', 'T'}) {
      const int m = 7, n = 6, k = 9;
      const int ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
      auto a = matrix(ar, ac, ar, 1, false, 0), bm = matrix(br, bc, br, 2, false, 0), c = matrix(m, n, m, 3, false, 0);
      std::vector<uint16_t> ha, hb;
      for (cd v : a) ha.push_back(to_bits(v.real(), p.ab));
      for (cd v : bm) hb.push_back(to_bits(v.real(), p.ab));
      CUdeviceptr da = upload(ha), db = upload(hb), dc;
      const bool c16 = p.c != CUDA_R_32F;
      if (c16) {
        std::vector<uint16_t> hc;
        for (cd v : c) hc.push_back(to_bits(v.real(), p.c));
        dc = upload(hc);
      } else {
        dc = upload(as<float>(c));
      }
      float alf = 1.5f, bef = -0.5f;
      uint16_t alh = float_to_half(alf), beh = float_to_half(bef);
      const bool half_scalars = p.compute == CUBLAS_COMPUTE_16F;
      const void* al = half_scalars ? static_cast<const void*>(&alh) : &alf;
      const void* be = half_scalars ? static_cast<const void*>(&beh) : &bef;
      BLAS_OK(b.cublasGemmEx(h, op_of(ta), op_of(tb), m, n, k, al, reinterpret_cast<void*>(da), p.ab, ar,
                             reinterpret_cast<void*>(db), p.ab, br, be, reinterpret_cast<void*>(dc), p.c, m, p.compute,
                             CUBLAS_GEMM_DEFAULT_TENSOR_OP));
      std::vector<double> scale;
      auto want = c;
      reference_gemm(ta, tb, m, n, k, 1.5, a, ar, bm, br, -0.5, want, m, &scale);
      std::vector<double> got;
      if (c16) {
        for (uint16_t v : download<uint16_t>(dc, size_t(m) * n)) got.push_back(from_bits(v, p.c));
      } else {
        for (float v : download<float>(dc, size_t(m) * n)) got.push_back(v);
      }
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_LE(std::abs(got[i] - want[i].real()), p.tol * scale[i]) << ta << tb << " element " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, GemmHalfTest,
    ::testing::Values(HalfCase{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 1e-3},
                      HalfCase{CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1e-5},
                      HalfCase{CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 8e-3},
                      HalfCase{CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, 1e-5},
                      HalfCase{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, 1e-3}));

// Output rounding: fp16 results are rounded to nearest even, not truncated.
// 1 + (2^-11 + 2^-13) is just above the fp16 halfway point between 1 and
// 1 + 2^-10 (each operand is exact in fp16; the sum is exact in fp32).
TEST_F(GemmTest, HalfOutputRoundsToNearest) {
  std::vector<uint16_t> a = {float_to_half(1), float_to_half(1)};
  std::vector<uint16_t> bb = {float_to_half(1), float_to_half(0x1p-11f + 0x1p-13f)};
  ASSERT_EQ(0x1p-11f + 0x1p-13f, half_to_float(bb[1]));
  CUdeviceptr da = upload(a), db = upload(bb);
  std::vector<uint16_t> c = {0};
  CUdeviceptr dc = upload(c);
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, reinterpret_cast<void*>(da), CUDA_R_16F, 1,
                          reinterpret_cast<void*>(db), CUDA_R_16F, 2, &zero, reinterpret_cast<void*>(dc), CUDA_R_16F,
                          1));
  EXPECT_EQ(0x3c01, download<uint16_t>(dc, 1)[0]);  // 1 + 2^-10; truncation would give 0x3c00
  // cublasSgemmEx has no fp32-to-fp16 form.
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED,
            b.cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, reinterpret_cast<void*>(da), CUDA_R_32F, 1,
                            reinterpret_cast<void*>(db), CUDA_R_32F, 1, &zero, reinterpret_cast<void*>(dc),
                            CUDA_R_16F, 1));
}

TEST_F(GemmTest, StridedBatchedWithBroadcastA) {
  const int m = 4, n = 3, k = 5, batch = 3, lda = 6, ldb = 5, ldc = 4;
  const long long sa = 0, sb = ldb * n + 2, sc = ldc * n + 1;
  auto a = matrix(m, k, lda, 1, false, kNaN);
  std::vector<cd> bm(size_t(sb) * batch, kNaN), c(size_t(sc) * batch, 9.0);
  for (int i = 0; i < batch; ++i) {
    auto one = matrix(k, n, ldb, 10 + i, false, kNaN);
    std::copy(one.begin(), one.end(), bm.begin() + i * sb);
    auto cc = matrix(m, n, ldc, 20 + i, false, 0);
    std::copy(cc.begin(), cc.end(), c.begin() + i * sc);
  }
  CUdeviceptr da = upload(as<float>(a)), db = upload(as<float>(bm)), dc = upload(as<float>(c));
  float al = 2, be = -1;
  BLAS_OK(b.cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, reinterpret_cast<float*>(da), lda,
                                      sa, reinterpret_cast<float*>(db), ldb, sb, &be, reinterpret_cast<float*>(dc),
                                      ldc, sc, batch));
  auto got = download<float>(dc, c.size());
  for (int i = 0; i < batch; ++i) {
    std::vector<cd> bi(bm.begin() + i * sb, bm.begin() + i * sb + ldb * n);
    std::vector<cd> ci(c.begin() + i * sc, c.begin() + i * sc + ldc * n);
    std::vector<double> scale;
    reference_gemm('N', 'N', m, n, k, 2.0, a, lda, bi, ldb, -1.0, ci, ldc, &scale);
    for (int e = 0; e < ldc * n; ++e) {
      EXPECT_NEAR(ci[size_t(e)].real(), got[size_t(i * sc + e)], 1e-5 * scale[size_t(e)]) << i << " " << e;
    }
    EXPECT_EQ(9.0f, got[size_t(i * sc + ldc * n)]) << "gap between batches written";
  }
}

TEST_F(GemmTest, GemmStridedBatchedExBf16AndZgemmStrided) {
  const int m = 3, n = 2, k = 4, batch = 2;
  std::vector<uint16_t> a, bb, c(size_t(m) * n * batch, 0);
  for (int i = 0; i < m * k * batch; ++i) a.push_back(float_to_bf16(float(pattern(i, 1))));
  for (int i = 0; i < k * n * batch; ++i) bb.push_back(float_to_bf16(float(pattern(i, 2))));
  CUdeviceptr da = upload(a), db = upload(bb), dc = upload(c);
  float al = 1, be = 0;
  BLAS_OK(b.cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, reinterpret_cast<void*>(da),
                                       CUDA_R_16BF, m, m * k, reinterpret_cast<void*>(db), CUDA_R_16BF, k, k * n, &be,
                                       reinterpret_cast<void*>(dc), CUDA_R_16BF, m, m * n, batch, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
  auto got = download<uint16_t>(dc, c.size());
  for (int s = 0; s < batch; ++s) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double want = 0, mag = 0;
        for (int l = 0; l < k; ++l) {
          double x = pattern(s * m * k + l * m + i, 1) * pattern(s * k * n + j * k + l, 2);
          want += x;
          mag += std::abs(x);
        }
        EXPECT_NEAR(want, bf16_to_float(got[size_t(s * m * n + j * m + i)]), 8e-3 * mag);
      }
    }
  }
  // The complex strided form shares the engine; one batch entry per stride.
  std::vector<cuDoubleComplex> za = {{1, 1}, {2, 0}}, zb = {{0, 1}, {3, -1}}, zc(2);
  CUdeviceptr dza = upload(za), dzb = upload(zb), dzc = upload(zc);
  cuDoubleComplex zal = {1, 0}, zbe = {0, 0};
  BLAS_OK(b.cublasZgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &zal,
                                      reinterpret_cast<cuDoubleComplex*>(dza), 1, 1,
                                      reinterpret_cast<cuDoubleComplex*>(dzb), 1, 1, &zbe,
                                      reinterpret_cast<cuDoubleComplex*>(dzc), 1, 1, 2));
  auto zg = download<cuDoubleComplex>(dzc, 2);
  EXPECT_EQ(-1.0, zg[0].x);  // (1+i)(i) = -1 + i
  EXPECT_EQ(1.0, zg[0].y);
  EXPECT_EQ(6.0, zg[1].x);  // 2 (3 - i)
  EXPECT_EQ(-2.0, zg[1].y);
}

// beta == 0: C is not read, so NaN in it does not reach the result; alpha ==
// 0: A and B are not read.
TEST_F(GemmTest, ZeroBetaIgnoresNaNInCAndZeroAlphaIgnoresAB) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, 2, 3, 4}, bb = {5, 6, 7, 8}, c(4, nan);
  CUdeviceptr da = upload(a), db = upload(bb), dc = upload(c);
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, reinterpret_cast<float*>(da), 2,
                           reinterpret_cast<float*>(db), 2, &zero, reinterpret_cast<float*>(dc), 2));
  EXPECT_EQ((std::vector<float>{23, 34, 31, 46}), download<float>(dc, 4));

  std::vector<float> nans(4, nan), c2 = {1, 2, 3, 4};
  CUdeviceptr dn = upload(nans), dc2 = upload(c2);
  float two = 2;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &zero, reinterpret_cast<float*>(dn), 2,
                           reinterpret_cast<float*>(dn), 2, &two, reinterpret_cast<float*>(dc2), 2));
  EXPECT_EQ((std::vector<float>{2, 4, 6, 8}), download<float>(dc2, 4));
}

TEST_F(GemmTest, EmptyProblemsSucceedWithoutTouchingMemory) {
  float one = 1, zero = 0;
  // m == 0, n == 0: nothing; k == 0: C = beta C (here beta 0: zeros).
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 4, 4, &one, nullptr, 1, nullptr, 4, &zero, nullptr, 1));
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 0, 4, &one, nullptr, 4, nullptr, 4, &zero, nullptr, 4));
  std::vector<float> c = {std::numeric_limits<float>::quiet_NaN(), 3};
  CUdeviceptr dc = upload(c);
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 0, &one, nullptr, 2, nullptr, 1, &zero,
                           reinterpret_cast<float*>(dc), 2));
  EXPECT_EQ((std::vector<float>{0, 0}), download<float>(dc, 2));
}

TEST_F(GemmTest, InvalidArgumentsAreRefusedLikeCublas) {
  std::vector<float> buf(64, 1);
  auto* p = reinterpret_cast<float*>(upload(buf));
  float one = 1;
  auto sgemm = [&](cublasHandle_t hh, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                   int ldb, int ldc) {
    return b.cublasSgemm_v2(hh, ta, tb, m, n, k, &one, p, lda, p, ldb, &one, p, ldc);
  };
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED, sgemm(nullptr, N, N, 2, 2, 2, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, -1, 2, 2, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 2, -1, 2, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 2, 2, -1, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, cublasOperation_t(3), N, 2, 2, 2, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 4, 2, 2, 3, 2, 4));  // lda < m
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, T, N, 4, 2, 3, 2, 3, 4));  // lda < k for A^T
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 2, 2, 3, 2, 2, 2));  // ldb < k
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, T, 2, 3, 2, 2, 2, 2));  // ldb < n for B^T
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 3, 2, 2, 3, 2, 2));  // ldc < m
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, sgemm(h, N, N, 0, 2, 2, 0, 2, 1));  // ld < 1 even when empty
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, sgemm(h, N, N, 2, 2, 2, 2, 2, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, p, 2, 4, p, 2, 4, &one, p, 2, 4, -1));
  // Types cuBLAS has no kernel for.
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, b.cublasGemmEx(h, N, N, 2, 2, 2, &one, p, CUDA_R_16F, 2, p, CUDA_R_32F, 2,
                                                        &one, p, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                                        CUBLAS_GEMM_DEFAULT));
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, b.cublasGemmEx(h, N, N, 2, 2, 2, &one, p, CUDA_R_32F, 2, p, CUDA_R_32F, 2,
                                                        &one, p, CUDA_R_32F, 2, CUBLAS_COMPUTE_64F,
                                                        CUBLAS_GEMM_DEFAULT));
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, b.cublasGemmEx(h, N, N, 2, 2, 2, &one, p, CUDA_R_8I, 2, p, CUDA_R_8I, 2,
                                                        &one, p, CUDA_R_32I, 2, CUBLAS_COMPUTE_32I,
                                                        CUBLAS_GEMM_DEFAULT));
  // Memory outside every allocation: refused at the call, nothing queued.
  EXPECT_EQ(CUBLAS_STATUS_EXECUTION_FAILED, b.cublasSgemm_v2(h, N, N, 9, 9, 9, &one, p, 9, p, 9, &one, p, 9));
  float host[4] = {};
  EXPECT_EQ(CUBLAS_STATUS_EXECUTION_FAILED, b.cublasSgemm_v2(h, N, N, 2, 2, 2, &one, host, 2, p, 2, &one, p, 2));
}

}  // namespace
}  // namespace rgpu::cpublas::test
