// The stand-in's recurrent networks against a reference written here, one
// sequence at a time in double precision, from cuDNN's formulas: forward
// outputs and final states, and every gradient (data, states, weights)
// against central differences of the reference. LSTM (with and without a
// projection), GRU, RNN tanh and ReLU; uni- and bidirectional; two layers;
// the three data layouts with per-sequence lengths; fp16 data; refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "dnn_lib.h"

namespace rgpu::cpudnn::test {
namespace {

struct Net {
  cudnnRNNMode_t cell = CUDNN_LSTM;
  bool bidir = false;
  int layers = 1, input = 3, hidden = 4, proj = 4;
  int T = 3;
  std::vector<int> lens = {3, 3};
  cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
  int dirs() const { return bidir ? 2 : 1; }
  int B() const { return int(lens.size()); }
  int gates() const { return cell == CUDNN_LSTM ? 4 : cell == CUDNN_GRU ? 3 : 1; }
  int layer_input(int l) const { return l == 0 ? input : proj * dirs(); }
  // Where row (t, b) of a sequence operand is in memory.
  int row(int t, int b) const {
    if (layout == CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED) return b * T + t;
    if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED) return t * B() + b;
    int r = 0;
    for (int tt = 0; tt < t; ++tt)
      for (int len : lens) r += len > tt;
    return r + b;
  }
  int rows() const {
    if (layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) return T * B();
    int n = 0;
    for (int len : lens) n += len;
    return n;
  }
};

// Element offsets of each matrix and bias in the weight space, as the
// stand-in reports them; -1 where absent.
struct Offsets {
  std::vector<std::vector<long>> m, b;  // [pseudo][lin]
};

double sig(double v) { return 1 / (1 + std::exp(-v)); }

struct Result {
  std::vector<double> y, hy, cy;  // y in memory order (rows x proj*dirs), states [pseudo][b][k]
};

// The reference: one sequence, one direction, one layer at a time.
Result reference(const Net& n, const Offsets& o, const std::vector<double>& w, const std::vector<double>& x,
                 const std::vector<double>& hx, const std::vector<double>& cx) {
  const int H = n.hidden, P = n.proj, B = n.B(), D = n.dirs(), G = n.gates();
  Result r;
  r.y.assign(size_t(n.rows() * P * D), 0.0);
  r.hy.assign(size_t(n.layers * D * B * P), 0.0);
  r.cy.assign(size_t(n.layers * D * B * H), 0.0);
  for (int b = 0; b < B; ++b) {
    const int len = n.lens[size_t(b)];
    std::vector<std::vector<double>> in(static_cast<size_t>(len));
    for (int t = 0; t < len; ++t)
      in[size_t(t)].assign(x.begin() + n.row(t, b) * n.input, x.begin() + (n.row(t, b) + 1) * n.input);
    for (int l = 0; l < n.layers; ++l) {
      const int I = n.layer_input(l);
      std::vector<std::vector<double>> out(static_cast<size_t>(len), std::vector<double>(size_t(P * D)));
      for (int d = 0; d < D; ++d) {
        const int p = l * D + d;
        auto mat = [&](int lin, int j, int k, int cols) {
          return w[size_t(o.m[size_t(p)][size_t(lin)] + j * cols + k)];
        };
        auto bias = [&](int lin, int j) {
          const long off = o.b[size_t(p)][size_t(lin)];
          return off < 0 ? 0.0 : w[size_t(off + j)];
        };
        std::vector<double> h(static_cast<size_t>(P)), c(static_cast<size_t>(H));
        for (int k = 0; k < P; ++k) h[size_t(k)] = hx[size_t((p * B + b) * P + k)];
        for (int k = 0; k < H; ++k) c[size_t(k)] = n.cell == CUDNN_LSTM ? cx[size_t((p * B + b) * H + k)] : 0;
        for (int s = 0; s < len; ++s) {
          const int t = d == 0 ? s : len - 1 - s;
          const std::vector<double>& xt = in[size_t(t)];
          std::vector<double> a(static_cast<size_t>(G * H)), rr(static_cast<size_t>(G * H));
          for (int gi = 0; gi < G; ++gi)
            for (int j = 0; j < H; ++j) {
              double v = bias(gi, j), u = bias(G + gi, j);
              for (int k = 0; k < I; ++k) v += mat(gi, j, k, I) * xt[size_t(k)];
              for (int k = 0; k < P; ++k) u += mat(G + gi, j, k, P) * h[size_t(k)];
              a[size_t(gi * H + j)] = v, rr[size_t(gi * H + j)] = u;
            }
          std::vector<double> nh(static_cast<size_t>(H));
          for (int j = 0; j < H; ++j) {
            auto pre = [&](int gi) { return a[size_t(gi * H + j)] + rr[size_t(gi * H + j)]; };
            if (n.cell == CUDNN_LSTM) {
              const double i = sig(pre(0)), f = sig(pre(1)), g = std::tanh(pre(2)), oo = sig(pre(3));
              c[size_t(j)] = f * c[size_t(j)] + i * g;
              nh[size_t(j)] = oo * std::tanh(c[size_t(j)]);
            } else if (n.cell == CUDNN_GRU) {
              const double rg = sig(pre(0)), z = sig(pre(1));
              const double nn = std::tanh(a[size_t(2 * H + j)] + rg * rr[size_t(2 * H + j)]);
              nh[size_t(j)] = (1 - z) * nn + z * h[size_t(j)];
            } else {
              nh[size_t(j)] = n.cell == CUDNN_RNN_TANH ? std::tanh(pre(0)) : std::max(pre(0), 0.0);
            }
          }
          if (P != H) {
            for (int q = 0; q < P; ++q) {
              double v = 0;
              for (int k = 0; k < H; ++k) v += mat(8, q, k, H) * nh[size_t(k)];
              h[size_t(q)] = v;
            }
          } else {
            h = nh;
          }
          for (int k = 0; k < P; ++k) out[size_t(t)][size_t(d * P + k)] = h[size_t(k)];
        }
        for (int k = 0; k < P; ++k) r.hy[size_t((p * B + b) * P + k)] = h[size_t(k)];
        for (int k = 0; k < H; ++k) r.cy[size_t((p * B + b) * H + k)] = c[size_t(k)];
      }
      in = out;
    }
    for (int t = 0; t < len; ++t)
      for (int k = 0; k < P * D; ++k) r.y[size_t(n.row(t, b) * P * D + k)] = in[size_t(t)][size_t(k)];
  }
  return r;
}

double value(int i, int salt) { return double((i * 37 + salt * 11) % 23 - 11) / 20.0; }
std::vector<double> pattern(size_t n, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(int(i), salt);
  return v;
}
std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

class RnnTest : public DnnTest {
 protected:
  void TearDown() override {
    for (auto t : tensors_) d.cudnnDestroyTensorDescriptor(t);
    for (auto t : datas_) d.cudnnDestroyRNNDataDescriptor(t);
    if (rnn_) d.cudnnDestroyRNNDescriptor(rnn_);
    if (drop_) d.cudnnDestroyDropoutDescriptor(drop_);
    DnnTest::TearDown();
  }

  cudnnTensorDescriptor_t tensor3(int a, int b, int c, cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    cudnnTensorDescriptor_t t = nullptr;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnCreateTensorDescriptor(&t));
    // PyTorch describes its states in 5-D, padded with dims of 1.
    const int dims[5] = {a, b, c, 1, 1}, strides[5] = {b * c, c, 1, 1, 1};
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnSetTensorNdDescriptor(t, dt, pad5_ ? 5 : 3, dims, strides));
    tensors_.push_back(t);
    return t;
  }
  cudnnRNNDataDescriptor_t data(const Net& n, int vector, cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    cudnnRNNDataDescriptor_t t = nullptr;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnCreateRNNDataDescriptor(&t));
    float fill = 0;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS,
              d.cudnnSetRNNDataDescriptor(t, dt, n.layout, n.T, n.B(), vector, n.lens.data(), &fill));
    datas_.push_back(t);
    return t;
  }
  cudnnStatus_t describe(const Net& n, cudnnDataType_t dt = CUDNN_DATA_FLOAT, float dropout = 0,
                         cudnnRNNInputMode_t input_mode = CUDNN_LINEAR_INPUT) {
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnCreateDropoutDescriptor(&drop_));
    if (dropout > 0) {
      size_t bytes = 0;
      EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnDropoutGetStatesSize(h, &bytes));
      states_ = upload(std::vector<float>(bytes / 4 + 1));
      EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnSetDropoutDescriptor(drop_, h, dropout, (void*)states_, bytes, 7));
    } else {
      EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnSetDropoutDescriptor(drop_, h, 0, nullptr, 0, 0));
    }
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnCreateRNNDescriptor(&rnn_));
    return d.cudnnSetRNNDescriptor_v8(rnn_, CUDNN_RNN_ALGO_STANDARD, n.cell, n.bias,
                                      n.bidir ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, input_mode, dt,
                                      CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, n.input, n.hidden, n.proj, n.layers,
                                      drop_, CUDNN_RNN_PADDED_IO_ENABLED);
  }
  Offsets offsets(const Net& n, size_t* elems, size_t elem_bytes = 4) {
    size_t bytes = 0;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnGetRNNWeightSpaceSize(h, rnn_, &bytes));
    *elems = bytes / elem_bytes;
    Offsets o;
    const int ids = n.proj != n.hidden ? 9 : 2 * n.gates();
    char* base = reinterpret_cast<char*>(0x10000);
    cudnnTensorDescriptor_t md = tensor3(1, 1, 1), bd = tensor3(1, 1, 1);
    for (int p = 0; p < n.layers * n.dirs(); ++p) {
      o.m.emplace_back(size_t(ids), -1);
      o.b.emplace_back(size_t(ids), -1);
      for (int lin = 0; lin < ids; ++lin) {
        if (lin >= 2 * n.gates() && lin != 8) continue;
        void *ma = nullptr, *ba = nullptr;
        EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnGetRNNWeightParams(h, rnn_, p, bytes, base, lin, md, &ma, bd, &ba));
        if (ma) o.m[size_t(p)][size_t(lin)] = long((static_cast<char*>(ma) - base) / long(elem_bytes));
        if (ba) o.b[size_t(p)][size_t(lin)] = long((static_cast<char*>(ba) - base) / long(elem_bytes));
        if (ma) {
          cudnnDataType_t dt;
          int nd = 0, dims[3], strides[3];
          EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnGetTensorNdDescriptor(md, 3, &dt, &nd, dims, strides));
          const int rows = lin == 8 ? n.proj : n.hidden;
          const int cols = lin == 8 ? n.hidden : lin < n.gates() ? n.layer_input(p / n.dirs()) : n.proj;
          EXPECT_EQ(3, nd);
          EXPECT_EQ(rows, dims[1]) << "pseudo " << p << " lin " << lin;
          EXPECT_EQ(cols, dims[2]) << "pseudo " << p << " lin " << lin;
        }
      }
    }
    return o;
  }

  // Runs forward (training), backward data and backward weights with the
  // given output gradients; checks against the reference and its
  // differences.
  void check(const Net& n) {
    ASSERT_EQ(CUDNN_STATUS_SUCCESS, describe(n));
    size_t elems = 0;
    const Offsets o = offsets(n, &elems);
    const int D = n.dirs(), B = n.B(), L = n.layers, H = n.hidden, P = n.proj;
    const bool lstm = n.cell == CUDNN_LSTM;
    std::vector<double> w = pattern(elems, 1), x = pattern(size_t(n.rows() * n.input), 2);
    std::vector<double> hx = pattern(static_cast<size_t>(L * D * B * P), 3);
    std::vector<double> cx = pattern(static_cast<size_t>(L * D * B * H), 4);
    std::vector<double> gy = pattern(size_t(n.rows() * P * D), 5), ghy = pattern(hx.size(), 6),
                        gcy = pattern(cx.size(), 7);
    auto xd = data(n, n.input), yd = data(n, P * D);
    auto hd = tensor3(L * D, B, P), cd = tensor3(L * D, B, H);
    size_t ws = 0, rs = 0;
    DNN_OK(d.cudnnGetRNNTempSpaceSizes(h, rnn_, CUDNN_FWD_MODE_TRAINING, xd, &ws, &rs));
    CUdeviceptr w_ = upload(to_float(w)), x_ = upload(to_float(x)), hx_ = upload(to_float(hx)),
                cx_ = upload(to_float(cx)), y_ = upload(std::vector<float>(gy.size())),
                hy_ = upload(std::vector<float>(hx.size())), cy_ = upload(std::vector<float>(cx.size())),
                res_ = upload(std::vector<float>(rs / 4 + 1)), ws_ = upload(std::vector<float>(ws / 4 + 1));
    DNN_OK(d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, xd, (void*)x_, yd, (void*)y_, hd,
                             (void*)hx_, (void*)hy_, cd, lstm ? (void*)cx_ : nullptr, lstm ? (void*)cy_ : nullptr,
                             elems * 4, (void*)w_, ws, (void*)ws_, rs, (void*)res_));
    const Result ref = reference(n, o, w, x, hx, cx);
    auto y = download(y_, gy.size()), hy = download(hy_, hx.size()), cy = download(cy_, cx.size());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(ref.y[i], y[i], 1e-5) << "y " << i;
    for (size_t i = 0; i < hy.size(); ++i) ASSERT_NEAR(ref.hy[i], hy[i], 1e-5) << "hy " << i;
    if (lstm) {
      for (size_t i = 0; i < cy.size(); ++i) ASSERT_NEAR(ref.cy[i], cy[i], 1e-5) << "cy " << i;
    }

    CUdeviceptr gy_ = upload(to_float(gy)), ghy_ = upload(to_float(ghy)), gcy_ = upload(to_float(gcy)),
                dx_ = upload(std::vector<float>(x.size())), dhx_ = upload(std::vector<float>(hx.size())),
                dcx_ = upload(std::vector<float>(cx.size())), dw_ = upload(std::vector<float>(elems));
    DNN_OK(d.cudnnRNNBackwardData_v8(h, rnn_, nullptr, yd, (void*)y_, (void*)gy_, xd, (void*)dx_, hd, (void*)hx_,
                                     (void*)ghy_, (void*)dhx_, cd, lstm ? (void*)cx_ : nullptr,
                                     lstm ? (void*)gcy_ : nullptr, lstm ? (void*)dcx_ : nullptr, elems * 4,
                                     (void*)w_, ws, (void*)ws_, rs, (void*)res_));
    DNN_OK(d.cudnnRNNBackwardWeights_v8(h, rnn_, CUDNN_WGRAD_MODE_ADD, nullptr, xd, (void*)x_, hd, (void*)hx_, yd,
                                        (void*)y_, elems * 4, (void*)dw_, ws, (void*)ws_, rs, (void*)res_));
    auto dx = download(dx_, x.size()), dhx = download(dhx_, hx.size()), dcx = download(dcx_, cx.size()),
         dw = download(dw_, elems);

    auto loss = [&](const std::vector<double>& ww, const std::vector<double>& xx, const std::vector<double>& hh,
                    const std::vector<double>& cc) {
      const Result r = reference(n, o, ww, xx, hh, cc);
      double s = 0;
      for (size_t i = 0; i < r.y.size(); ++i) s += r.y[i] * gy[i];
      for (size_t i = 0; i < r.hy.size(); ++i) s += r.hy[i] * ghy[i];
      if (lstm) {
        for (size_t i = 0; i < r.cy.size(); ++i) s += r.cy[i] * gcy[i];
      }
      return s;
    };
    const double eps = 1e-5, tol = 2e-4;
    auto numeric = [&](std::vector<double>& v, size_t i, auto eval) {
      const double keep = v[i];
      v[i] = keep + eps;
      const double up = eval();
      v[i] = keep - eps;
      const double down = eval();
      v[i] = keep;
      return (up - down) / (2 * eps);
    };
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(numeric(x, i, [&] { return loss(w, x, hx, cx); }), dx[i], tol) << "dx " << i;
    for (size_t i = 0; i < hx.size(); ++i)
      ASSERT_NEAR(numeric(hx, i, [&] { return loss(w, x, hx, cx); }), dhx[i], tol) << "dhx " << i;
    if (lstm) {
      for (size_t i = 0; i < cx.size(); ++i)
        ASSERT_NEAR(numeric(cx, i, [&] { return loss(w, x, hx, cx); }), dcx[i], tol) << "dcx " << i;
    }
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(numeric(w, i, [&] { return loss(w, x, hx, cx); }), dw[i], tol) << "dw " << i;
  }

  bool pad5_ = false;
  cudnnRNNDescriptor_t rnn_ = nullptr;
  cudnnDropoutDescriptor_t drop_ = nullptr;
  CUdeviceptr states_ = 0;
  std::vector<cudnnTensorDescriptor_t> tensors_;
  std::vector<cudnnRNNDataDescriptor_t> datas_;
};

TEST_F(RnnTest, LstmMatchesTheReference) { check(Net{}); }

TEST_F(RnnTest, GruMatchesTheReference) {
  Net n;
  n.cell = CUDNN_GRU;
  check(n);
}

TEST_F(RnnTest, RnnTanhMatchesTheReference) {
  Net n;
  n.cell = CUDNN_RNN_TANH;
  check(n);
}

TEST_F(RnnTest, RnnReluMatchesTheReference) {
  Net n;
  n.cell = CUDNN_RNN_RELU;
  check(n);
}

TEST_F(RnnTest, BidirectionalTwoLayerLstm) {
  Net n;
  n.bidir = true;
  n.layers = 2;
  check(n);
}

TEST_F(RnnTest, BidirectionalTwoLayerGru) {
  Net n;
  n.cell = CUDNN_GRU;
  n.bidir = true;
  n.layers = 2;
  check(n);
}

TEST_F(RnnTest, PackedVariableLengths) {
  Net n;
  n.bidir = true;
  n.T = 4;
  n.lens = {4, 2, 1};
  n.layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;
  pad5_ = true;
  check(n);
}

TEST_F(RnnTest, BatchMajorUnsortedLengths) {
  Net n;
  n.cell = CUDNN_GRU;
  n.bidir = true;
  n.T = 3;
  n.lens = {1, 3, 2};
  n.layout = CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
  check(n);
}

TEST_F(RnnTest, LstmWithProjection) {
  Net n;
  n.proj = 2;
  n.layers = 2;
  n.bidir = true;
  check(n);
}

TEST_F(RnnTest, NoBias) {
  Net n;
  n.bias = CUDNN_RNN_NO_BIAS;
  n.cell = CUDNN_GRU;
  check(n);
}

TEST_F(RnnTest, HalfDataIsComputedInFloat) {
  Net n;
  ASSERT_EQ(CUDNN_STATUS_SUCCESS, describe(n, CUDNN_DATA_HALF));
  size_t elems = 0;
  const Offsets o = offsets(n, &elems, 2);
  const int B = n.B(), H = n.hidden;
  std::vector<double> w = pattern(elems, 1), x = pattern(size_t(n.rows() * n.input), 2);
  std::vector<double> hx(static_cast<size_t>(B * H), 0.0), cx(static_cast<size_t>(B * H), 0.0);
  auto halves = [](const std::vector<double>& v) {
    std::vector<_Float16> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = _Float16(v[i]);
    return out;
  };
  auto put = [&](const std::vector<_Float16>& v) {
    std::vector<float> words((v.size() * 2 + 3) / 4);
    std::memcpy(words.data(), v.data(), v.size() * 2);
    return upload(words);
  };
  // The reference sees the rounded values the stand-in reads.
  auto hw = halves(w), hxv = halves(x);
  for (size_t i = 0; i < w.size(); ++i) w[i] = double(hw[i]);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(hxv[i]);
  auto xd = data(n, n.input, CUDNN_DATA_HALF), yd = data(n, H, CUDNN_DATA_HALF);
  auto hd = tensor3(1, B, H, CUDNN_DATA_HALF);
  CUdeviceptr w_ = put(hw), x_ = put(hxv), y_ = upload(std::vector<float>(size_t(n.rows() * H)));
  DNN_OK(d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_INFERENCE, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                           nullptr, hd, nullptr, nullptr, elems * 2, (void*)w_, 0, nullptr, 0, nullptr));
  const Result ref = reference(n, o, w, x, hx, cx);
  auto raw = download(y_, size_t(n.rows() * H));
  std::vector<_Float16> y(ref.y.size());
  std::memcpy(y.data(), raw.data(), y.size() * 2);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(ref.y[i], double(y[i]), 2e-3) << i;
}

TEST_F(RnnTest, InferenceIgnoresDropoutAndTrainingUsesIt) {
  Net n;
  n.layers = 2;
  n.hidden = n.proj = 8;
  ASSERT_EQ(CUDNN_STATUS_SUCCESS, describe(n, CUDNN_DATA_FLOAT, 0.5f));
  size_t elems = 0;
  const Offsets o = offsets(n, &elems);
  std::vector<double> w = pattern(elems, 1), x = pattern(size_t(n.rows() * n.input), 2);
  std::vector<double> zeros(size_t(2 * n.B() * 8), 0.0);
  auto xd = data(n, n.input), yd = data(n, 8);
  auto hd = tensor3(2, n.B(), 8);
  size_t ws = 0, rs = 0;
  DNN_OK(d.cudnnGetRNNTempSpaceSizes(h, rnn_, CUDNN_FWD_MODE_TRAINING, xd, &ws, &rs));
  CUdeviceptr w_ = upload(to_float(w)), x_ = upload(to_float(x)), y_ = upload(std::vector<float>(size_t(n.rows() * 8)));
  CUdeviceptr res_ = upload(std::vector<float>(rs / 4 + 1));
  DNN_OK(d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_INFERENCE, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                           nullptr, hd, nullptr, nullptr, elems * 4, (void*)w_, 0, nullptr, 0, nullptr));
  const Result ref = reference(n, o, w, x, zeros, zeros);
  auto y = download(y_, ref.y.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(ref.y[i], y[i], 1e-5) << i;
  DNN_OK(d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                           nullptr, hd, nullptr, nullptr, elems * 4, (void*)w_, 0, nullptr, rs, (void*)res_));
  auto first = download(y_, ref.y.size());
  DNN_OK(d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                           nullptr, hd, nullptr, nullptr, elems * 4, (void*)w_, 0, nullptr, rs, (void*)res_));
  auto second = download(y_, ref.y.size());
  EXPECT_NE(first, y);
  EXPECT_NE(first, second);  // the generator's state advanced
}

TEST_F(RnnTest, RefusesWhatItCannotComputeAndTooSmallBuffers) {
  Net n;
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, describe(n, CUDNN_DATA_FLOAT, 0, CUDNN_SKIP_INPUT));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            d.cudnnSetRNNDescriptor_v8(rnn_, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                       CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_DOUBLE,
                                       CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, 3, 4, 4, 1, drop_, 0));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            d.cudnnSetRNNDescriptor_v8(rnn_, CUDNN_RNN_ALGO_STANDARD, CUDNN_GRU, CUDNN_RNN_DOUBLE_BIAS,
                                       CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                       CUDNN_DEFAULT_MATH, 3, 4, 2, 1, drop_, 0));
  ASSERT_EQ(CUDNN_STATUS_SUCCESS,
            d.cudnnSetRNNDescriptor_v8(rnn_, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                       CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                       CUDNN_DEFAULT_MATH, 3, 4, 4, 1, drop_, 0));
  size_t bytes = 0, ws = 0, rs = 0;
  DNN_OK(d.cudnnGetRNNWeightSpaceSize(h, rnn_, &bytes));
  auto xd = data(n, 3), yd = data(n, 4);
  auto hd = tensor3(1, n.B(), 4);
  DNN_OK(d.cudnnGetRNNTempSpaceSizes(h, rnn_, CUDNN_FWD_MODE_TRAINING, xd, &ws, &rs));
  CUdeviceptr w_ = upload(std::vector<float>(bytes / 4)), x_ = upload(std::vector<float>(size_t(n.rows() * 3)));
  CUdeviceptr y_ = upload(std::vector<float>(size_t(n.rows() * 4))), res_ = upload(std::vector<float>(rs / 4));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                              nullptr, hd, nullptr, nullptr, bytes, (void*)w_, 0, nullptr, rs - 4, (void*)res_));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, xd, (void*)x_, yd, (void*)y_, hd, nullptr,
                              nullptr, hd, nullptr, nullptr, bytes - 4, (void*)w_, 0, nullptr, rs, (void*)res_));
  // x and y swapped: the vector sizes disagree with the descriptor.
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            d.cudnnRNNForward(h, rnn_, CUDNN_FWD_MODE_TRAINING, nullptr, yd, (void*)x_, xd, (void*)y_, hd, nullptr,
                              nullptr, hd, nullptr, nullptr, bytes, (void*)w_, 0, nullptr, rs, (void*)res_));
}

}  // namespace
}  // namespace rgpu::cpudnn::test
