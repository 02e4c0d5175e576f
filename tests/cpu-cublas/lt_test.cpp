// cuBLASLt: descriptors and attributes, the heuristic, and matmul with
// transposes, batches, bias and the RELU/GELU epilogues.
#include <cmath>

#include "blas_lib.h"
#include "convert.h"

namespace rgpu::cpublas::test {
namespace {

class LtTest : public BlasTest {
 protected:
  void SetUp() override {
    BlasTest::SetUp();
    BLAS_OK(b.cublasLtCreate(&lt));
  }
  void TearDown() override {
    if (lt) {
      EXPECT_EQ(CUBLAS_STATUS_SUCCESS, b.cublasLtDestroy(lt));
    }
    for (auto l : layouts) b.cublasLtMatrixLayoutDestroy(l);
    if (desc) b.cublasLtMatmulDescDestroy(desc);
    BlasTest::TearDown();
  }
  cublasLtMatrixLayout_t layout(cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(CUBLAS_STATUS_SUCCESS, b.cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
    layouts.push_back(l);
    return l;
  }
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, V v) {
    ASSERT_EQ(CUBLAS_STATUS_SUCCESS, b.cublasLtMatmulDescSetAttribute(desc, attr, &v, sizeof v));
  }

  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  std::vector<cublasLtMatrixLayout_t> layouts;
};

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

TEST_F(LtTest, AttributesRoundTripWithExactSizes) {
  BLAS_OK(b.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t transa = CUBLAS_OP_T;
  BLAS_OK(b.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, b.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                                          &transa, sizeof(int64_t)));
  size_t written = 0;
  BLAS_OK(b.cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, &written));
  EXPECT_EQ(sizeof(void*), written);
  int32_t got = 0;
  BLAS_OK(b.cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &got, sizeof got, &written));
  EXPECT_EQ(CUBLAS_OP_T, got);
  BLAS_OK(b.cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &got, sizeof got, nullptr));
  EXPECT_EQ(CUDA_R_32F, got);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasLtMatmulDescSetAttribute(desc, cublasLtMatmulDescAttributes_t(9999), &got, sizeof got));

  auto l = layout(CUDA_R_16F, 4, 3, 8);
  int64_t ld = 0;
  BLAS_OK(b.cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &written));
  EXPECT_EQ(8, ld);
  int32_t batch = 5;
  BLAS_OK(b.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
  batch = 0;
  BLAS_OK(b.cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, nullptr));
  EXPECT_EQ(5, batch);

  cublasLtMatmulPreference_t pref = nullptr;
  BLAS_OK(b.cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = 1 << 20;
  BLAS_OK(b.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  uint32_t align = 0;
  BLAS_OK(b.cublasLtMatmulPreferenceGetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align,
                                                 sizeof align, nullptr));
  EXPECT_EQ(256u, align);
  BLAS_OK(b.cublasLtMatmulPreferenceDestroy(pref));
}

// D = act(alpha op(A) op(B) + beta C + bias), fp32, A transposed, C != D.
struct EpilogueCase {
  cublasLtEpilogue_t epilogue;
  const char* name;
};

class LtEpilogueTest : public LtTest, public ::testing::WithParamInterface<EpilogueCase> {};

TEST_P(LtEpilogueTest, Fp32MatchesReference) {
  const auto epi = GetParam().epilogue;
  const int m = 4, n = 3, k = 5;
  std::vector<float> a(size_t(k) * m), bb(size_t(k) * n), c(size_t(m) * n), bias(m), d(size_t(m) * n, -99);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 11) - 5) / 4;
  for (size_t i = 0; i < bb.size(); ++i) bb[i] = float(int(i * 5 % 9) - 4) / 4;
  for (size_t i = 0; i < c.size(); ++i) c[i] = float(i % 3);
  for (int i = 0; i < m; ++i) bias[size_t(i)] = float(i) - 1.5f;
  CUdeviceptr da = upload(a), db = upload(bb), dc = upload(c), dd = upload(d), dbias = upload(bias);
  BLAS_OK(b.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(CUBLASLT_MATMUL_DESC_TRANSA, int32_t(CUBLAS_OP_T));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(epi));
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(dbias));
  auto la = layout(CUDA_R_32F, k, m, k), lb = layout(CUDA_R_32F, k, n, k), lc = layout(CUDA_R_32F, m, n, m),
       ld = layout(CUDA_R_32F, m, n, m);
  cublasLtMatmulPreference_t pref = nullptr;
  BLAS_OK(b.cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  BLAS_OK(b.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1, &result, &count));
  ASSERT_EQ(1, count);
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, result.state);
  BLAS_OK(b.cublasLtMatmulPreferenceDestroy(pref));
  float alpha = 1.5f, beta = 0.5f;
  BLAS_OK(b.cublasLtMatmul(lt, desc, &alpha, reinterpret_cast<void*>(da), la, reinterpret_cast<void*>(db), lb, &beta,
                           reinterpret_cast<void*>(dc), lc, reinterpret_cast<void*>(dd), ld, &result.algo, nullptr, 0,
                           nullptr));
  auto got = download<float>(dd, d.size());
  const bool with_bias = epi & CUBLASLT_EPILOGUE_BIAS;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double acc = 0, mag = 0;
      for (int l = 0; l < k; ++l) {
        acc += double(a[size_t(i * k + l)]) * bb[size_t(j * k + l)];
        mag += std::abs(double(a[size_t(i * k + l)]) * bb[size_t(j * k + l)]);
      }
      double x = alpha * acc + beta * c[size_t(j * m + i)] + (with_bias ? bias[size_t(i)] : 0);
      if (epi == CUBLASLT_EPILOGUE_RELU || epi == CUBLASLT_EPILOGUE_RELU_BIAS) x = x > 0 ? x : 0;
      if (epi == CUBLASLT_EPILOGUE_GELU || epi == CUBLASLT_EPILOGUE_GELU_BIAS) x = gelu(x);
      EXPECT_NEAR(x, got[size_t(j * m + i)], 1e-5 * (alpha * mag + 4)) << i << "," << j;
    }
  }
  EXPECT_EQ(c, download<float>(dc, c.size()));  // C is only read
}

INSTANTIATE_TEST_SUITE_P(Epilogues, LtEpilogueTest,
                         ::testing::Values(EpilogueCase{CUBLASLT_EPILOGUE_DEFAULT, "default"},
                                           EpilogueCase{CUBLASLT_EPILOGUE_BIAS, "bias"},
                                           EpilogueCase{CUBLASLT_EPILOGUE_RELU, "relu"},
                                           EpilogueCase{CUBLASLT_EPILOGUE_RELU_BIAS, "relu_bias"},
                                           EpilogueCase{CUBLASLT_EPILOGUE_GELU, "gelu"},
                                           EpilogueCase{CUBLASLT_EPILOGUE_GELU_BIAS, "gelu_bias"}),
                         [](const auto& info) { return std::string(info.param.name); });

// What linear() does in half precision: D = A^T B + bias (fp16 data and
// bias), beta 0 with C == D, batched with strides, on a stream.
TEST_F(LtTest, Fp16BatchedBiasOnAStream) {
  const int m = 3, n = 2, k = 4, batch = 2;
  std::vector<uint16_t> a, bb, bias, d(size_t(m) * n * batch, float_to_half(std::nanf("")));
  for (int i = 0; i < k * m * batch; ++i) a.push_back(float_to_half(float(i % 5) / 2));
  for (int i = 0; i < k * n * batch; ++i) bb.push_back(float_to_half(float(i % 3) - 1));
  for (int i = 0; i < m * batch; ++i) bias.push_back(float_to_half(float(i)));
  CUdeviceptr da = upload(a), db = upload(bb), dd = upload(d), dbias = upload(bias);
  BLAS_OK(b.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(CUBLASLT_MATMUL_DESC_TRANSA, int32_t(CUBLAS_OP_T));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_BIAS));
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(dbias));
  set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t(m));
  set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_16F));
  auto la = layout(CUDA_R_16F, k, m, k), lb = layout(CUDA_R_16F, k, n, k), ld = layout(CUDA_R_16F, m, n, m);
  for (auto [l, stride] : {std::pair{la, int64_t(k * m)}, {lb, int64_t(k * n)}, {ld, int64_t(m * n)}}) {
    int32_t count = batch;
    BLAS_OK(b.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    BLAS_OK(b.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof stride));
  }
  CUstream stream = nullptr;
  CU_OK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  float alpha = 1, beta = 0;
  BLAS_OK(b.cublasLtMatmul(lt, desc, &alpha, reinterpret_cast<void*>(da), la, reinterpret_cast<void*>(db), lb, &beta,
                           reinterpret_cast<void*>(dd), ld, reinterpret_cast<void*>(dd), ld, nullptr, nullptr, 0,
                           reinterpret_cast<cudaStream_t>(stream)));
  CU_OK(cu.cuStreamSynchronize(stream));
  CU_OK(cu.cuStreamDestroy(stream));
  auto got = download<uint16_t>(dd, d.size());
  for (int s = 0; s < batch; ++s) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double want = s * m + i, mag = 1;
        for (int l = 0; l < k; ++l) {
          double x = double(half_to_float(a[size_t(s * k * m + i * k + l)])) *
                     half_to_float(bb[size_t(s * k * n + j * k + l)]);
          want += x;
          mag += std::abs(x);
        }
        EXPECT_NEAR(want, half_to_float(got[size_t(s * m * n + j * m + i)]), 1e-3 * (mag + want)) << s << i << j;
      }
    }
  }
}

TEST_F(LtTest, UnsupportedAndInvalidConfigurations) {
  BLAS_OK(b.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  auto l = layout(CUDA_R_32F, 2, 2, 2);
  std::vector<float> buf(4, 1);
  CUdeviceptr p = upload(buf);
  auto* v = reinterpret_cast<void*>(p);
  float one = 1;
  auto matmul = [&](cublasLtMatrixLayout_t x) {
    return b.cublasLtMatmul(lt, desc, &one, v, x, v, x, &one, v, x, v, x, nullptr, nullptr, 0, nullptr);
  };
  BLAS_OK(matmul(l));
  // A bias epilogue without a bias.
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_RELU_BIAS));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(l));
  // Outputs the stand-in does not produce.
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_GELU_AUX));
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, matmul(l));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_DEFAULT));
  // Row-major order.
  auto row = layout(CUDA_R_32F, 2, 2, 2);
  int32_t order = CUBLASLT_ORDER_ROW;
  BLAS_OK(b.cublasLtMatrixLayoutSetAttribute(row, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order));
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, matmul(row));
  cublasLtMatmulPreference_t pref = nullptr;
  BLAS_OK(b.cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 7;
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED,
            b.cublasLtMatmulAlgoGetHeuristic(lt, desc, row, row, row, row, pref, 1, &result, &count));
  EXPECT_EQ(0, count);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasLtMatmulAlgoGetHeuristic(lt, desc, l, l, l, l, pref, 0, &result, &count));
  BLAS_OK(b.cublasLtMatmulPreferenceDestroy(pref));
  // Mismatched shapes and a leading dimension below the rows.
  auto wide = layout(CUDA_R_32F, 2, 3, 2);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            b.cublasLtMatmul(lt, desc, &one, v, l, v, wide, &one, v, l, v, l, nullptr, nullptr, 0, nullptr));
  auto narrow = layout(CUDA_R_32F, 2, 2, 1);
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, matmul(narrow));
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED,
            b.cublasLtMatmul(nullptr, desc, &one, v, l, v, l, &one, v, l, v, l, nullptr, nullptr, 0, nullptr));
}

}  // namespace
}  // namespace rgpu::cpublas::test
