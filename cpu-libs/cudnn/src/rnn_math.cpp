// Recurrent networks on dense float32 arrays (rnn_math.h). The GEMMs are
// oneDNN's sgemm; the gates are plain loops.
//
// The reserve space, in floats: per layer its input as the layer read it
// (after dropout), then its dropout mask where the configuration has
// dropout, then per pseudo-layer one record per (t, b) row (Record below).
// Rows of padding stay zero, so the backward GEMMs may run over all rows.
#include "rnn_math.h"

#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace rgpu::cpudnn::rnn {
namespace {

// C (m x n, ldc) = alpha * op(A) op(B) + beta * C, row-major.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
    return;
  }
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) != dnnl_success) {
    throw std::runtime_error("sgemm failed");
  }
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// Where each value of one (pseudo-layer, t, b) lives in its record.
struct Record {
  int64_t gates, c, cprev, hprev, rhn, m, dgi, dgr, dh, size;
  explicit Record(const Config& cf) {
    const int64_t gh = cf.gates() * cf.hidden, h = cf.hidden, p = cf.proj;
    gates = 0;          // activated gates (RNN: the new state)
    c = gates + gh;     // LSTM: the cell after the step
    cprev = c + h;      // LSTM: the cell before it
    hprev = cprev + h;  // the state before the step
    rhn = hprev + p;    // GRU: R_n h + b_Rn
    m = rhn + h;        // LSTM: o * tanh(c), what the projection reads
    dgi = m + h;        // gradients of the input GEMM's output
    dgr = dgi + gh;     // gradients of the recurrent GEMM's output
    dh = dgr + gh;      // the gradient of the state after the step
    size = dh + p;
  }
};

struct Layout {
  std::vector<uint64_t> xin, mask, records;  // per layer, per layer, per pseudo-layer
  uint64_t total = 0;
  Layout(const Config& c, int64_t T, int64_t B) {
    const uint64_t rows = uint64_t(T) * uint64_t(B);
    const Record r(c);
    for (int l = 0; l < c.layers; ++l) {
      xin.push_back(total);
      total += rows * uint64_t(c.layer_input(l));
      mask.push_back(total);
      if (l > 0 && c.dropout > 0) total += rows * uint64_t(c.layer_input(l));
    }
    for (int p = 0; p < c.layers * c.dirs; ++p) {
      records.push_back(total);
      total += rows * uint64_t(r.size);
    }
  }
};

struct Weights {
  const float *w = nullptr, *r = nullptr, *proj = nullptr, *bw = nullptr, *br = nullptr;
};
template <class F>
Weights weights_of(const Config& c, int p, F* base) {
  Weights out;
  Block b;
  const int g = c.gates();
  if (matrix_block(c, p, 0, &b)) out.w = base + b.offset;
  if (matrix_block(c, p, g, &b)) out.r = base + b.offset;
  if (c.projects() && matrix_block(c, p, 8, &b)) out.proj = base + b.offset;
  if (bias_block(c, p, 0, &b)) out.bw = base + b.offset;
  if (bias_block(c, p, g, &b)) out.br = base + b.offset;
  return out;
}

}  // namespace

float Rng::uniform() {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * ++counter;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(z >> 40) * (1.0f / 16777216.0f);
}

bool matrix_block(const Config& c, int pseudo, int lin, Block* out) {
  const int g = c.gates();
  if (pseudo < 0 || pseudo >= c.layers * c.dirs) return false;
  const int layer = pseudo / c.dirs;
  const int64_t h = c.hidden, in = c.layer_input(layer), gh = g * h;
  const int64_t per_pseudo_before = [&] {
    int64_t n = 0;
    for (int q = 0; q < pseudo; ++q) {
      const int64_t qin = c.layer_input(q / c.dirs);
      n += gh * qin + gh * c.proj + (c.projects() ? c.proj * h : 0) + (c.bias_in ? gh : 0) + (c.bias_rec ? gh : 0);
    }
    return n;
  }();
  if (lin >= 0 && lin < g) {
    *out = {per_pseudo_before + lin * h * in, h, in};
    return true;
  }
  if (lin >= g && lin < 2 * g) {
    *out = {per_pseudo_before + gh * in + (lin - g) * h * c.proj, h, c.proj};
    return true;
  }
  if (lin == 8 && c.projects()) {
    *out = {per_pseudo_before + gh * in + gh * c.proj, c.proj, h};
    return true;
  }
  return false;
}

bool bias_block(const Config& c, int pseudo, int lin, Block* out) {
  const int g = c.gates();
  Block last;
  if (!matrix_block(c, pseudo, 2 * g - 1, &last)) return false;
  int64_t start = last.offset + last.rows * last.cols + (c.projects() ? c.proj * c.hidden : 0);
  if (lin >= 0 && lin < g) {
    if (!c.bias_in) return false;
    *out = {start + lin * c.hidden, c.hidden, 1};
    return true;
  }
  if (lin >= g && lin < 2 * g) {
    if (!c.bias_rec) return false;
    if (c.bias_in) start += g * c.hidden;
    *out = {start + (lin - g) * c.hidden, c.hidden, 1};
    return true;
  }
  return false;
}

int64_t weight_elems(const Config& c) {
  const int g = c.gates(), last = c.layers * c.dirs - 1;
  Block b;
  if (c.bias_rec && bias_block(c, last, 2 * g - 1, &b)) return b.offset + b.rows;
  if (c.bias_in && bias_block(c, last, g - 1, &b)) return b.offset + b.rows;
  matrix_block(c, last, 2 * g - 1, &b);
  return b.offset + b.rows * b.cols + (c.projects() ? c.proj * c.hidden : 0);
}

uint64_t reserve_floats(const Config& c, int64_t T, int64_t B) { return Layout(c, T, B).total; }

void forward(const Config& c, const Batch& s, const float* x, const float* hx, const float* cx, const float* w,
             float* y, float* hy, float* cy, float* reserve, bool training, Rng* rng) {
  const Layout lay(c, s.T, s.B);
  const Record rc(c);
  const int g = c.gates();
  const int64_t T = s.T, B = s.B, H = c.hidden, P = c.proj, GH = g * H, rows = T * B;
  std::memset(reserve, 0, lay.total * sizeof(float));
  std::memcpy(reserve + lay.xin[0], x, size_t(rows * c.input) * sizeof(float));
  std::vector<float> xw(size_t(rows * GH)), rh(size_t(B * GH)), hs(size_t(B * P)), cs(size_t(B * H));
  for (int l = 0; l < c.layers; ++l) {
    const int64_t in = c.layer_input(l);
    float* xin = reserve + lay.xin[l];
    if (l > 0 && c.dropout > 0 && training) {
      float* mask = reserve + lay.mask[l];
      const float keep = 1.0f / (1.0f - c.dropout);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t b = 0; b < B; ++b) {
          if (!s.active(t, b)) continue;
          for (int64_t k = 0; k < in; ++k) {
            const size_t i = size_t((t * B + b) * in + k);
            mask[i] = rng->uniform() < c.dropout ? 0.0f : keep;
            xin[i] *= mask[i];
          }
        }
    }
    // Where this layer writes: the next layer's input, or y.
    const bool last = l == c.layers - 1;
    float* out = last ? y : reserve + lay.xin[size_t(l + 1)];
    const int64_t out_w = P * c.dirs;
    for (int d = 0; d < c.dirs; ++d) {
      const int p = l * c.dirs + d;
      const Weights wt = weights_of(c, p, w);
      float* recs = reserve + lay.records[size_t(p)];
      gemm(false, true, rows, GH, in, xin, in, wt.w, in, 0.0f, xw.data(), GH);
      if (wt.bw) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < GH; ++j) xw[size_t(r * GH + j)] += wt.bw[j];
      }
      for (int64_t i = 0; i < B * P; ++i) hs[size_t(i)] = hx ? hx[p * B * P + i] : 0.0f;
      for (int64_t i = 0; i < B * H; ++i) cs[size_t(i)] = cx && c.cell == kLstm ? cx[p * B * H + i] : 0.0f;
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = d == 0 ? step : T - 1 - step;
        gemm(false, true, B, GH, P, hs.data(), P, wt.r, P, 0.0f, rh.data(), GH);
        for (int64_t b = 0; b < B; ++b) {
          if (!s.active(t, b)) continue;
          float* rec = recs + (t * B + b) * rc.size;
          const float* a = &xw[size_t((t * B + b) * GH)];
          float* r = &rh[size_t(b * GH)];
          if (wt.br) {
            for (int64_t j = 0; j < GH; ++j) r[j] += wt.br[j];
          }
          float* hb = &hs[size_t(b * P)];
          float* cb = &cs[size_t(b * H)];
          std::memcpy(rec + rc.hprev, hb, size_t(P) * sizeof(float));
          float* gt = rec + rc.gates;
          if (c.cell == kLstm) {
            std::memcpy(rec + rc.cprev, cb, size_t(H) * sizeof(float));
            for (int64_t k = 0; k < H; ++k) {
              const float i = sigmoid(a[k] + r[k]), f = sigmoid(a[H + k] + r[H + k]);
              const float gg = std::tanh(a[2 * H + k] + r[2 * H + k]), o = sigmoid(a[3 * H + k] + r[3 * H + k]);
              gt[k] = i, gt[H + k] = f, gt[2 * H + k] = gg, gt[3 * H + k] = o;
              cb[k] = f * cb[k] + i * gg;
              rec[rc.c + k] = cb[k];
              rec[rc.m + k] = o * std::tanh(cb[k]);
            }
            if (wt.proj) {
              for (int64_t q = 0; q < P; ++q) {
                float v = 0;
                for (int64_t k = 0; k < H; ++k) v += wt.proj[q * H + k] * rec[rc.m + k];
                hb[q] = v;
              }
            } else {
              std::memcpy(hb, rec + rc.m, size_t(H) * sizeof(float));
            }
          } else if (c.cell == kGru) {
            for (int64_t k = 0; k < H; ++k) {
              const float rr = sigmoid(a[k] + r[k]), z = sigmoid(a[H + k] + r[H + k]);
              const float n = std::tanh(a[2 * H + k] + rr * r[2 * H + k]);
              gt[k] = rr, gt[H + k] = z, gt[2 * H + k] = n;
              rec[rc.rhn + k] = r[2 * H + k];
              hb[k] = (1.0f - z) * n + z * hb[k];
            }
          } else {
            for (int64_t k = 0; k < H; ++k) {
              const float v = a[k] + r[k];
              hb[k] = c.cell == kRelu ? std::max(v, 0.0f) : std::tanh(v);
              gt[k] = hb[k];
            }
          }
          std::memcpy(out + (t * B + b) * out_w + d * P, hb, size_t(P) * sizeof(float));
        }
      }
      if (hy) std::memcpy(hy + p * B * P, hs.data(), size_t(B * P) * sizeof(float));
      if (cy && c.cell == kLstm) std::memcpy(cy + p * B * H, cs.data(), size_t(B * H) * sizeof(float));
    }
    if (last) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t b = 0; b < B; ++b)
          if (!s.active(t, b)) std::memset(y + (t * B + b) * out_w, 0, size_t(out_w) * sizeof(float));
    }
  }
}

void backward_data(const Config& c, const Batch& s, const float* dy, const float* dhy, const float* dcy,
                   const float* w, float* dx, float* dhx, float* dcx, float* reserve, bool training) {
  const Layout lay(c, s.T, s.B);
  const Record rc(c);
  const int g = c.gates();
  const int64_t T = s.T, B = s.B, H = c.hidden, P = c.proj, GH = g * H, rows = T * B, out_w = P * c.dirs;
  std::vector<float> dout(dy, dy + rows * out_w), din, dh(size_t(B * P)), dc(size_t(B * H)), dhn(size_t(B * P));
  std::vector<float> dm(static_cast<size_t>(H));
  for (int l = c.layers - 1; l >= 0; --l) {
    const int64_t in = c.layer_input(l);
    din.assign(size_t(rows * in), 0.0f);
    for (int d = 0; d < c.dirs; ++d) {
      const int p = l * c.dirs + d;
      const Weights wt = weights_of(c, p, w);
      float* recs = reserve + lay.records[size_t(p)];
      for (int64_t i = 0; i < B * P; ++i) dh[size_t(i)] = dhy ? dhy[p * B * P + i] : 0.0f;
      for (int64_t i = 0; i < B * H; ++i) dc[size_t(i)] = dcy && c.cell == kLstm ? dcy[p * B * H + i] : 0.0f;
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = d == 0 ? T - 1 - step : step;
        for (int64_t b = 0; b < B; ++b) {
          float* dnb = &dhn[size_t(b * P)];
          if (!s.active(t, b)) {
            std::memcpy(dnb, &dh[size_t(b * P)], size_t(P) * sizeof(float));
            continue;
          }
          float* rec = recs + (t * B + b) * rc.size;
          float* dht = rec + rc.dh;
          const float* dyt = &dout[size_t((t * B + b) * out_w + d * P)];
          for (int64_t q = 0; q < P; ++q) dht[q] = dh[size_t(b * P + q)] + dyt[q];
          const float* gt = rec + rc.gates;
          float* dgi = rec + rc.dgi;
          float* dgr = rec + rc.dgr;
          std::fill(dnb, dnb + P, 0.0f);
          if (c.cell == kLstm) {
            if (wt.proj) {
              for (int64_t k = 0; k < H; ++k) {
                float v = 0;
                for (int64_t q = 0; q < P; ++q) v += wt.proj[q * H + k] * dht[q];
                dm[size_t(k)] = v;
              }
            } else {
              std::memcpy(dm.data(), dht, size_t(H) * sizeof(float));
            }
            float* dcb = &dc[size_t(b * H)];
            for (int64_t k = 0; k < H; ++k) {
              const float i = gt[k], f = gt[H + k], gg = gt[2 * H + k], o = gt[3 * H + k];
              const float tc = std::tanh(rec[rc.c + k]);
              const float dct = dcb[k] + dm[size_t(k)] * o * (1.0f - tc * tc);
              dgi[k] = dct * gg * i * (1.0f - i);
              dgi[H + k] = dct * rec[rc.cprev + k] * f * (1.0f - f);
              dgi[2 * H + k] = dct * i * (1.0f - gg * gg);
              dgi[3 * H + k] = dm[size_t(k)] * tc * o * (1.0f - o);
              dcb[k] = dct * f;
            }
            std::memcpy(dgr, dgi, size_t(GH) * sizeof(float));
          } else if (c.cell == kGru) {
            for (int64_t k = 0; k < H; ++k) {
              const float rr = gt[k], z = gt[H + k], n = gt[2 * H + k], hp = rec[rc.hprev + k];
              const float dpn = dht[k] * (1.0f - z) * (1.0f - n * n);
              const float dpr = dpn * rec[rc.rhn + k] * rr * (1.0f - rr);
              const float dpz = dht[k] * (hp - n) * z * (1.0f - z);
              dgi[k] = dgr[k] = dpr;
              dgi[H + k] = dgr[H + k] = dpz;
              dgi[2 * H + k] = dpn;
              dgr[2 * H + k] = dpn * rr;
              dnb[k] = dht[k] * z;
            }
          } else {
            for (int64_t k = 0; k < H; ++k) {
              const float hv = gt[k];
              dgi[k] = dgr[k] = c.cell == kRelu ? (hv > 0 ? dht[k] : 0.0f) : dht[k] * (1.0f - hv * hv);
            }
          }
        }
        // dh_prev = direct part + dgr R, for the rows of this step (the
        // records of inactive rows hold zeros, so their dh passes through).
        gemm(false, false, B, P, GH, recs + t * B * rc.size + rc.dgr, rc.size, wt.r, P, 1.0f, dhn.data(), P);
        dh.swap(dhn);
      }
      if (dhx) std::memcpy(dhx + p * B * P, dh.data(), size_t(B * P) * sizeof(float));
      if (dcx && c.cell == kLstm) std::memcpy(dcx + p * B * H, dc.data(), size_t(B * H) * sizeof(float));
      gemm(false, false, rows, in, GH, recs + rc.dgi, rc.size, wt.w, in, 1.0f, din.data(), in);
    }
    if (l > 0 && c.dropout > 0 && training) {
      const float* mask = reserve + lay.mask[size_t(l)];
      for (int64_t i = 0; i < rows * in; ++i) din[size_t(i)] *= mask[i];
    }
    dout.swap(din);
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      if (!s.active(t, b)) std::fill_n(dout.begin() + (t * B + b) * c.input, c.input, 0.0f);
  std::memcpy(dx, dout.data(), size_t(rows * c.input) * sizeof(float));
}

void backward_weights(const Config& c, const Batch& s, const float* reserve, float* dw) {
  const Layout lay(c, s.T, s.B);
  const Record rc(c);
  const int g = c.gates();
  const int64_t rows = s.T * s.B, H = c.hidden, P = c.proj, GH = g * H;
  for (int p = 0; p < c.layers * c.dirs; ++p) {
    const int l = p / c.dirs;
    const int64_t in = c.layer_input(l);
    const float* recs = reserve + lay.records[size_t(p)];
    Block b;
    matrix_block(c, p, 0, &b);
    gemm(true, false, GH, in, rows, recs + rc.dgi, rc.size, reserve + lay.xin[size_t(l)], in, 1.0f, dw + b.offset,
         in);
    matrix_block(c, p, g, &b);
    gemm(true, false, GH, P, rows, recs + rc.dgr, rc.size, recs + rc.hprev, rc.size, 1.0f, dw + b.offset, P);
    if (c.projects() && matrix_block(c, p, 8, &b)) {
      gemm(true, false, P, H, rows, recs + rc.dh, rc.size, recs + rc.m, rc.size, 1.0f, dw + b.offset, H);
    }
    for (int half = 0; half < 2; ++half) {
      if (!bias_block(c, p, half * g, &b)) continue;
      float* db = dw + b.offset;
      const int64_t off = half == 0 ? rc.dgi : rc.dgr;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < GH; ++j) db[j] += recs[r * rc.size + off + j];
    }
  }
}

}  // namespace rgpu::cpudnn::rnn
