// The stand-in's batch norm against a direct reference: training forward
// (output, running statistics, saved mean and inverse deviation), inference
// and backward, spatial and per-activation.
#include <gtest/gtest.h>

#include <cmath>

#include "dnn_lib.h"

namespace rgpu::cpudnn::test {
namespace {

float value(int i, int salt) { return float((i * 37 + salt * 11) % 23 - 11) / 7.0f; }

std::vector<float> pattern(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(int(i), salt);
  return v;
}

class BatchNormTest : public DnnTest {
 protected:
  cudnnTensorDescriptor_t desc(std::vector<int> dims) {
    cudnnTensorDescriptor_t t = nullptr;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnCreateTensorDescriptor(&t));
    std::vector<int> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, int(dims.size()), dims.data(),
                                                                 strides.data()));
    descs_.push_back(t);
    return t;
  }
  void TearDown() override {
    for (auto t : descs_) d.cudnnDestroyTensorDescriptor(t);
    DnnTest::TearDown();
  }
  std::vector<cudnnTensorDescriptor_t> descs_;
};

class BatchNormShapes : public BatchNormTest, public ::testing::WithParamInterface<std::vector<int>> {};

TEST_P(BatchNormShapes, TrainingForwardAndBackwardMatchTheReference) {
  const std::vector<int> shape = GetParam();
  const int n = shape[0], c = 2;
  int hw = 1;
  for (size_t i = 2; i < shape.size(); ++i) hw *= shape[i];
  std::vector<int> pshape(shape.size(), 1);
  pshape[1] = c;
  const double eps = 1e-5, factor = 0.25;
  auto x = pattern(n * c * hw, 1), scale = std::vector<float>{1.5f, -0.5f}, bias = std::vector<float>{0.25f, 2.0f};
  auto dy = pattern(n * c * hw, 2);
  CUdeviceptr dx_ = upload(x), dscale_ = upload(scale), dbias_ = upload(bias), dy_ = upload(dy);
  CUdeviceptr y_ = upload(std::vector<float>(x.size())), rm_ = upload({0.5f, 0.5f}), rv_ = upload({1.0f, 2.0f});
  CUdeviceptr sm_ = upload({0, 0}), siv_ = upload({0, 0}), gx_ = upload(std::vector<float>(x.size()));
  CUdeviceptr gs_ = upload({0, 0}), gb_ = upload({0, 0});
  auto xd = desc(shape), pd = desc(pshape);
  const float one = 1, zero = 0;
  DNN_OK(d.cudnnBatchNormalizationForwardTrainingEx(
      h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, xd, (void*)dx_, nullptr, nullptr, xd,
      (void*)y_, pd, (void*)dscale_, (void*)dbias_, factor, (void*)rm_, (void*)rv_, eps, (void*)sm_, (void*)siv_,
      nullptr, nullptr, 0, nullptr, 0));
  DNN_OK(d.cudnnBatchNormalizationBackwardEx(
      h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, &one, &zero, xd, (void*)dx_, nullptr, nullptr,
      xd, (void*)dy_, nullptr, nullptr, xd, (void*)gx_, pd, (void*)dscale_, (void*)dbias_, (void*)gs_, (void*)gb_,
      eps, (void*)sm_, (void*)siv_, nullptr, nullptr, 0, nullptr, 0));
  auto y = download(y_, x.size()), rm = download(rm_, 2), rv = download(rv_, 2), sm = download(sm_, 2),
       siv = download(siv_, 2), gx = download(gx_, x.size()), gs = download(gs_, 2), gb = download(gb_, 2);
  const double m = n * hw;
  const double rm0[2] = {0.5, 0.5}, rv0[2] = {1.0, 2.0};
  for (int ch = 0; ch < c; ++ch) {
    auto at = [&](const std::vector<float>& v, int i, int s) { return double(v[size_t((i * c + ch) * hw + s)]); };
    double mean = 0, var = 0;
    for (int i = 0; i < n; ++i)
      for (int s = 0; s < hw; ++s) mean += at(x, i, s);
    mean /= m;
    for (int i = 0; i < n; ++i)
      for (int s = 0; s < hw; ++s) var += (at(x, i, s) - mean) * (at(x, i, s) - mean);
    var /= m;
    const double inv = 1 / std::sqrt(var + eps);
    EXPECT_NEAR(sm[ch], mean, 1e-5);
    EXPECT_NEAR(siv[ch], inv, 1e-4);
    EXPECT_NEAR(rm[ch], (1 - factor) * rm0[ch] + factor * mean, 1e-5);
    EXPECT_NEAR(rv[ch], (1 - factor) * rv0[ch] + factor * var * m / (m - 1), 1e-4);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int i = 0; i < n; ++i)
      for (int s = 0; s < hw; ++s) {
        const double xhat = (at(x, i, s) - mean) * inv;
        EXPECT_NEAR(at(y, i, s), scale[size_t(ch)] * xhat + bias[size_t(ch)], 1e-4);
        sum_dy += at(dy, i, s);
        sum_dy_xhat += at(dy, i, s) * xhat;
      }
    // Float sums over n * hw terms: their rounding grows with their size.
    EXPECT_NEAR(gb[ch], sum_dy, 1e-4 + 1e-5 * std::abs(sum_dy));
    EXPECT_NEAR(gs[ch], sum_dy_xhat, 1e-4 + 1e-5 * std::abs(sum_dy_xhat));
    for (int i = 0; i < n; ++i)
      for (int s = 0; s < hw; ++s) {
        const double xhat = (at(x, i, s) - mean) * inv;
        const double want = scale[size_t(ch)] * inv / m * (m * at(dy, i, s) - sum_dy - xhat * sum_dy_xhat);
        EXPECT_NEAR(at(gx, i, s), want, 1e-4);
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormShapes,
                         ::testing::Values(std::vector<int>{3, 2, 5, 1}, std::vector<int>{2, 2, 4, 4, 3},
                                           std::vector<int>{16, 2, 32, 32}));

TEST_F(BatchNormTest, InferenceUsesTheGivenStatisticsAndBlends) {
  const int n = 2, c = 3, hw = 4;
  auto x = pattern(n * c * hw, 3);
  std::vector<float> scale{1, 2, 3}, bias{0, 1, -1}, mean{0.5f, -0.5f, 0}, var{1, 4, 0.25f};
  auto y0 = pattern(x.size(), 4);
  CUdeviceptr xp = upload(x), yp = upload(y0), sp = upload(scale), bp = upload(bias), mp = upload(mean),
              vp = upload(var);
  auto xd = desc({n, c, hw, 1}), pd = desc({1, c, 1, 1});
  const float alpha = 2, beta = 0.5f;
  DNN_OK(d.cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, xd, (void*)xp, xd,
                                                   (void*)yp, pd, (void*)sp, (void*)bp, (void*)mp, (void*)vp, 1e-5));
  auto y = download(yp, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / hw) % c;
    const double bn = scale[ch] * (x[i] - mean[ch]) / std::sqrt(var[ch] + 1e-5) + bias[ch];
    EXPECT_NEAR(y[i], alpha * bn + beta * y0[i], 1e-4) << i;
  }
}

TEST_F(BatchNormTest, PerActivationNormalisesEachElementOverTheBatch) {
  // Each of the c x hw elements is a feature of its own, normalised over n.
  const int n = 5, c = 2, hw = 3, f = c * hw;
  auto x = pattern(n * f, 5);
  std::vector<float> scale(f), bias(f);
  for (int i = 0; i < f; ++i) scale[size_t(i)] = 0.5f + 0.25f * float(i), bias[size_t(i)] = float(i) - 2;
  CUdeviceptr xp = upload(x), yp = upload(std::vector<float>(x.size())), sp = upload(scale), bp = upload(bias),
              smp = upload(std::vector<float>(f)), sivp = upload(std::vector<float>(f));
  auto xd = desc({n, c, hw, 1}), pd = desc({1, c, hw, 1});
  const float one = 1, zero = 0;
  const double eps = 1e-3;
  DNN_OK(d.cudnnBatchNormalizationForwardTrainingEx(
      h, CUDNN_BATCHNORM_PER_ACTIVATION, CUDNN_BATCHNORM_OPS_BN, &one, &zero, xd, (void*)xp, nullptr, nullptr, xd,
      (void*)yp, pd, (void*)sp, (void*)bp, 0.1, nullptr, nullptr, eps, (void*)smp, (void*)sivp, nullptr, nullptr, 0,
      nullptr, 0));
  auto y = download(yp, x.size()), sm = download(smp, f), siv = download(sivp, f);
  for (int e = 0; e < f; ++e) {
    double mean = 0, var = 0;
    for (int i = 0; i < n; ++i) mean += x[size_t(i * f + e)];
    mean /= n;
    for (int i = 0; i < n; ++i) var += (x[size_t(i * f + e)] - mean) * (x[size_t(i * f + e)] - mean);
    var /= n;
    const double inv = 1 / std::sqrt(var + eps);
    EXPECT_NEAR(sm[size_t(e)], mean, 1e-5) << e;
    EXPECT_NEAR(siv[size_t(e)], inv, 1e-4) << e;
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(y[size_t(i * f + e)], scale[size_t(e)] * (x[size_t(i * f + e)] - mean) * inv + bias[size_t(e)],
                  1e-4)
          << e;
    }
  }
}

TEST_F(BatchNormTest, RefusesFusedOpsAndMissingOperands) {
  auto xd = desc({2, 2, 2, 2}), pd = desc({1, 2, 1, 1});
  CUdeviceptr x = upload(std::vector<float>(16)), p = upload({1, 1});
  const float one = 1, zero = 0;
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            d.cudnnBatchNormalizationForwardTrainingEx(
                h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, &one, &zero, xd, (void*)x, nullptr,
                nullptr, xd, (void*)x, pd, (void*)p, (void*)p, 0.1, nullptr, nullptr, 1e-5, nullptr, nullptr,
                nullptr, nullptr, 0, nullptr, 0));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            d.cudnnBatchNormalizationForwardTrainingEx(
                h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, xd, (void*)x, nullptr, nullptr, xd,
                nullptr, pd, (void*)p, (void*)p, 0.1, nullptr, nullptr, 1e-5, nullptr, nullptr, nullptr, nullptr, 0,
                nullptr, 0));
}

}  // namespace
}  // namespace rgpu::cpudnn::test
