// cuDNN's RNN API end to end as PyTorch 2.6 drives it: a bidirectional
// LSTM over a packed batch of lengths 3, 2, 1, its weights written where
// cudnnGetRNNWeightParams says (asked many times over, answered from the
// client's memory after the first), a training forward checked against a
// reference computed here, backward data and backward weights run after it
// on the same reserve, then a forward whose reserve space is too small,
// refused. Prints "PASS cudnn_rnn" or "FAIL cudnn_rnn: why". Host code only.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(expr)                                                                      \
  do {                                                                                   \
    int s_ = static_cast<int>(expr);                                                     \
    if (s_ != 0) {                                                                       \
      std::printf("FAIL cudnn_rnn: %s = %d (line %d)\n", #expr, s_, __LINE__);           \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

namespace {

const int I = 3, H = 4, D = 2, T = 3, B = 3;
const int kLens[B] = {3, 2, 1};

float value(size_t i, int salt) { return float(int((i * 37 + size_t(salt) * 11) % 19) - 9) / 16.0f; }
double sig(double v) { return 1 / (1 + std::exp(-v)); }

// Row of (t, b) in the packed layout (lengths sorted, longest first).
int row(int t, int b) {
  int r = 0;
  for (int tt = 0; tt < t; ++tt)
    for (int bb = 0; bb < B; ++bb) r += kLens[bb] > tt;
  return r + b;
}

}  // namespace

int main() {
  cudnnHandle_t h;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudnnCreate(&h));
  CHECK(cudnnSetStream(h, stream));

  cudnnDropoutDescriptor_t drop;
  cudnnRNNDescriptor_t rnn;
  CHECK(cudnnCreateDropoutDescriptor(&drop));
  CHECK(cudnnSetDropoutDescriptor(drop, h, 0.0f, nullptr, 0, 0));
  CHECK(cudnnCreateRNNDescriptor(&rnn));
  CHECK(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_BIDIRECTIONAL,
                                 CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, I, H, H, 1,
                                 drop, CUDNN_RNN_PADDED_IO_DISABLED));
  cudnnRNNDataDescriptor_t xd, yd;
  CHECK(cudnnCreateRNNDataDescriptor(&xd));
  CHECK(cudnnCreateRNNDataDescriptor(&yd));
  CHECK(cudnnSetRNNDataDescriptor(xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, I, kLens,
                                  nullptr));
  CHECK(cudnnSetRNNDataDescriptor(yd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, H * D, kLens,
                                  nullptr));
  // States in 5-D, as PyTorch describes them.
  cudnnTensorDescriptor_t hd;
  CHECK(cudnnCreateTensorDescriptor(&hd));
  const int hdims[5] = {D, B, H, 1, 1}, hstrides[5] = {B * H, H, 1, 1, 1};
  CHECK(cudnnSetTensorNdDescriptor(hd, CUDNN_DATA_FLOAT, 5, hdims, hstrides));

  size_t wbytes = 0, work = 0, reserve = 0;
  CHECK(cudnnGetRNNWeightSpaceSize(h, rnn, &wbytes));
  CHECK(cudnnGetRNNTempSpaceSizes(h, rnn, CUDNN_FWD_MODE_TRAINING, xd, &work, &reserve));
  const size_t welems = wbytes / 4, rows = 6;  // 3 + 2 + 1
  void *w, *dw, *x, *y, *dy, *dx, *hx, *cx, *hy, *cy, *dhx, *dcx, *ws, *rs;
  CHECK(cudaMalloc(&w, wbytes));
  CHECK(cudaMalloc(&dw, wbytes));
  CHECK(cudaMalloc(&x, rows * I * 4));
  CHECK(cudaMalloc(&dx, rows * I * 4));
  CHECK(cudaMalloc(&y, rows * H * D * 4));
  CHECK(cudaMalloc(&dy, rows * H * D * 4));
  for (void** p : {&hx, &cx, &hy, &cy, &dhx, &dcx}) CHECK(cudaMalloc(p, D * B * H * 4));
  CHECK(cudaMalloc(&ws, work + 4));
  CHECK(cudaMalloc(&rs, reserve));

  // The weights, placed where the library says; each place asked several
  // times, as PyTorch does.
  std::vector<float> wh(welems, 0.0f);
  std::vector<long> moff(D * 8, -1), boff(D * 8, -1);
  cudnnTensorDescriptor_t md, bd;
  CHECK(cudnnCreateTensorDescriptor(&md));
  CHECK(cudnnCreateTensorDescriptor(&bd));
  for (int p = 0; p < D; ++p)
    for (int lin = 0; lin < 8; ++lin)
      for (int again = 0; again < 10; ++again) {
        void *ma = nullptr, *ba = nullptr;
        CHECK(cudnnGetRNNWeightParams(h, rnn, p, wbytes, w, lin, md, &ma, bd, &ba));
        cudnnDataType_t dt;
        int nd = 0, dims[3] = {}, strides[3] = {};
        CHECK(cudnnGetTensorNdDescriptor(md, 3, &dt, &nd, dims, strides));
        if (!ma || !ba || nd != 3 || dims[1] != H || dims[2] != (lin < 4 ? I : H)) {
          std::printf("FAIL cudnn_rnn: pseudo-layer %d matrix %d: %p %p nd %d dims %d %d\n", p, lin, ma, ba, nd,
                      dims[1], dims[2]);
          return 1;
        }
        moff[p * 8 + lin] = (static_cast<char*>(ma) - static_cast<char*>(w)) / 4;
        boff[p * 8 + lin] = (static_cast<char*>(ba) - static_cast<char*>(w)) / 4;
      }
  for (size_t i = 0; i < welems; ++i) wh[i] = value(i, 1);
  std::vector<float> xh(rows * I), hxh(D * B * H), cxh(D * B * H), dyh(rows * H * D);
  for (size_t i = 0; i < xh.size(); ++i) xh[i] = value(i, 2);
  for (size_t i = 0; i < hxh.size(); ++i) hxh[i] = value(i, 3), cxh[i] = value(i, 4);
  for (size_t i = 0; i < dyh.size(); ++i) dyh[i] = value(i, 5);
  CHECK(cudaMemcpy(w, wh.data(), wbytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(x, xh.data(), xh.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(hx, hxh.data(), hxh.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(cx, cxh.data(), cxh.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, dyh.data(), dyh.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dw, 0, wbytes));

  CHECK(cudnnRNNForward(h, rnn, CUDNN_FWD_MODE_TRAINING, nullptr, xd, x, yd, y, hd, hx, hy, hd, cx, cy, wbytes, w,
                        work, ws, reserve, rs));
  CHECK(cudnnRNNBackwardData_v8(h, rnn, nullptr, yd, y, dy, xd, dx, hd, hx, nullptr, dhx, hd, cx, nullptr, dcx, wbytes,
                                w, work, ws, reserve, rs));
  CHECK(cudnnRNNBackwardWeights_v8(h, rnn, CUDNN_WGRAD_MODE_ADD, nullptr, xd, x, hd, hx, yd, y, wbytes, dw, work, ws,
                                   reserve, rs));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<float> yh(rows * H * D), hyh(D * B * H), dwh(welems), dxh(rows * I);
  CHECK(cudaMemcpy(yh.data(), y, yh.size() * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hyh.data(), hy, hyh.size() * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dwh.data(), dw, wbytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dxh.data(), dx, dxh.size() * 4, cudaMemcpyDeviceToHost));

  // The reference: each sequence, each direction, cuDNN's LSTM formulas.
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d) {
      std::vector<double> hs(H), cs(H);
      for (int k = 0; k < H; ++k) hs[k] = hxh[(d * B + b) * H + k], cs[k] = cxh[(d * B + b) * H + k];
      for (int s = 0; s < kLens[b]; ++s) {
        const int t = d == 0 ? s : kLens[b] - 1 - s;
        std::vector<double> g(4 * H);
        for (int gate = 0; gate < 4; ++gate)
          for (int j = 0; j < H; ++j) {
            double v = wh[boff[d * 8 + gate] + j] + wh[boff[d * 8 + 4 + gate] + j];
            for (int k = 0; k < I; ++k) v += wh[moff[d * 8 + gate] + j * I + k] * xh[row(t, b) * I + k];
            for (int k = 0; k < H; ++k) v += wh[moff[d * 8 + 4 + gate] + j * H + k] * hs[k];
            g[gate * H + j] = v;
          }
        for (int j = 0; j < H; ++j) {
          cs[j] = sig(g[H + j]) * cs[j] + sig(g[j]) * std::tanh(g[2 * H + j]);
          hs[j] = sig(g[3 * H + j]) * std::tanh(cs[j]);
          worst = std::fmax(worst, std::fabs(hs[j] - yh[row(t, b) * H * D + d * H + j]));
        }
      }
      for (int k = 0; k < H; ++k) worst = std::fmax(worst, std::fabs(hs[k] - hyh[(d * B + b) * H + k]));
    }
  if (!(worst < 1e-5)) {
    std::printf("FAIL cudnn_rnn: forward differs from the reference by %g\n", worst);
    return 1;
  }
  double dw_norm = 0, dx_norm = 0;
  for (float v : dwh) dw_norm += double(v) * v;
  for (float v : dxh) dx_norm += double(v) * v;
  if (!(dw_norm > 0 && std::isfinite(dw_norm) && dx_norm > 0 && std::isfinite(dx_norm))) {
    std::printf("FAIL cudnn_rnn: gradients %g %g\n", dw_norm, dx_norm);
    return 1;
  }

  // A reserve space smaller than the library's: refused, reported at the
  // next synchronizing call.
  cudnnRNNForward(h, rnn, CUDNN_FWD_MODE_TRAINING, nullptr, xd, x, yd, y, hd, hx, hy, hd, cx, cy, wbytes, w, work, ws,
                  reserve - 4, rs);
  if (cudaStreamSynchronize(stream) == cudaSuccess) {
    std::printf("FAIL cudnn_rnn: a forward with too small a reserve space was not refused\n");
    return 1;
  }
  std::printf("PASS cudnn_rnn\n");
  return 0;
}
