// The stand-in's backend convolutions against a direct reference: forward,
// backward data and backward filter, in 2-D and 3-D, with stride, padding,
// dilation, groups, channels-last strides, alpha/beta blending and fp16;
// built as cuDNN's frontend builds them (tensors, convolution, operation,
// graph, heuristics, engine config, plan, variant pack); and shapes repeated
// and interleaved on one handle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dnn_lib.h"

namespace rgpu::cpudnn::test {
namespace {

enum Kind { kForward, kData, kFilter };

struct Shape {
  int64_t n, c, k, groups;
  std::vector<int64_t> in, kernel, pad, stride, dilation;  // spatial
  std::vector<int64_t> out() const {
    std::vector<int64_t> o;
    for (size_t i = 0; i < in.size(); ++i) {
      o.push_back((in[i] + 2 * pad[i] - dilation[i] * (kernel[i] - 1) - 1) / stride[i] + 1);
    }
    return o;
  }
  std::vector<int64_t> xdims() const { return cat({n, c}, in); }
  std::vector<int64_t> wdims() const { return cat({k, c / groups}, kernel); }
  std::vector<int64_t> ydims() const { return cat({n, k}, out()); }
  static std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

size_t count(const std::vector<int64_t>& d) {
  size_t n = 1;
  for (int64_t x : d) n *= size_t(x);
  return n;
}

float value(size_t i, int salt) { return float(int((i * 37 + size_t(salt) * 11) % 19) - 9) / 8.0f; }

std::vector<float> pattern(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(i, salt);
  return v;
}

// Dense (packed) index of a multi-index.
size_t at(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  size_t o = 0;
  for (size_t i = 0; i < dims.size(); ++i) o = o * size_t(dims[i]) + size_t(idx[i]);
  return o;
}

// y[n][k][o] = sum over c in k's group, r: x[n][c][o*s - p + r*d] * w[k][c'][r]; the
// gradients are its adjoints. Operates on packed tensors.
void reference(const Shape& s, Kind kind, std::vector<double>& x, std::vector<double>& w, std::vector<double>& y) {
  const auto xd = s.xdims(), wd = s.wdims(), yd = s.ydims(), od = s.out();
  const size_t sp = s.in.size();
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
  std::vector<int64_t> o(sp, 0), r(sp, 0);
  auto next = [](std::vector<int64_t>& v, const std::vector<int64_t>& lim) {
    for (size_t i = v.size(); i-- > 0;) {
      if (++v[i] < lim[i]) return true;
      v[i] = 0;
    }
    return false;
  };
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k) {
      std::fill(o.begin(), o.end(), 0);
      do {
        const size_t yi = at(yd, Shape::cat({n, k}, o));
        for (int64_t cc = 0; cc < cg; ++cc) {
          const int64_t c = (k / kg) * cg + cc;
          std::fill(r.begin(), r.end(), 0);
          do {
            std::vector<int64_t> in(sp);
            bool inside = true;
            for (size_t i = 0; i < sp; ++i) {
              in[i] = o[i] * s.stride[i] - s.pad[i] + r[i] * s.dilation[i];
              inside &= in[i] >= 0 && in[i] < s.in[i];
            }
            if (!inside) continue;
            const size_t xi = at(xd, Shape::cat({n, c}, in)), wi = at(wd, Shape::cat({k, cc}, r));
            if (kind == kForward) y[yi] += x[xi] * w[wi];
            if (kind == kData) x[xi] += y[yi] * w[wi];
            if (kind == kFilter) w[wi] += x[xi] * y[yi];
          } while (next(r, s.kernel));
        }
      } while (next(o, od));
    }
}

// Copies a packed tensor into a strided buffer and back.
std::vector<float> to_strided(const std::vector<float>& packed_v, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& strides, size_t span) {
  std::vector<float> out(span, NAN);
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t i = 0; i < packed_v.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < dims.size(); ++d) off += idx[d] * strides[d];
    out[size_t(off)] = packed_v[i];
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
std::vector<float> from_strided(const std::vector<float>& v, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& strides) {
  std::vector<float> out(count(dims));
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < dims.size(); ++d) off += idx[d] * strides[d];
    out[i] = v[size_t(off)];
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
size_t span_of(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  size_t last = 0;
  for (size_t d = 0; d < dims.size(); ++d) last += size_t(dims[d] - 1) * size_t(strides[d]);
  return last + 1;
}

class ConvTest : public DnnTest {
 protected:
  // The plan of one convolution, built through heuristics.
  cudnnBackendDescriptor_t plan(const Shape& s, Kind kind, bool nhwc, float alpha, float beta,
                                int64_t* engines = nullptr) {
    auto strides = [&](const std::vector<int64_t>& d) { return nhwc ? channels_last(d) : packed(d); };
    auto x = tensor('x', s.xdims(), strides(s.xdims()));
    auto w = tensor('w', s.wdims(), strides(s.wdims()));
    auto ydims = s.ydims();
    ydims[2] -= y_rows_short_;
    auto y = tensor('y', ydims, strides(ydims));
    auto conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const int64_t sp = int64_t(s.in.size());
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = mode_;
    set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sp);
    set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, sp, s.pad.data());
    set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, sp, s.pad.data());
    set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, sp, s.stride.data());
    set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, sp, s.dilation.data());
    finalize(conv);
    const cudnnBackendDescriptorType_t types[] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    auto op = make(types[kind]);
    const cudnnBackendAttributeName_t names[3][6] = {
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
    set(op, names[kind][0], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(op, names[kind][1], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    set(op, names[kind][2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(op, names[kind][3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    set(op, names[kind][4], CUDNN_TYPE_FLOAT, 1, &alpha);
    set(op, names[kind][5], CUDNN_TYPE_FLOAT, 1, &beta);
    finalize(op);
    auto graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    finalize(graph);
    auto heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_INSTANT;
    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
    finalize(heur);
    int64_t n = -1;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS,
              d.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                         nullptr));
    if (engines) *engines = n;
    if (n < 1) return nullptr;
    auto cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t got = 0;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &cfg));
    auto p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    finalize(p);
    int64_t ws = -1;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                               CUDNN_TYPE_INT64, 1, &got, &ws));
    EXPECT_EQ(0, ws);
    return p;
  }

  int64_t y_rows_short_ = 0;
  cudnnConvolutionMode_t mode_ = CUDNN_CROSS_CORRELATION;

  cudnnStatus_t execute(cudnnBackendDescriptor_t p, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y) {
    auto pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const int64_t uids[3] = {'x', 'w', 'y'};
    void* ptrs[3] = {(void*)x, (void*)w, (void*)y};
    void* ws = nullptr;
    set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    finalize(pack);
    return d.cudnnBackendExecute(h, p, pack);
  }

  // Runs `kind` on `s` and checks the output against the reference.
  void check(const Shape& s, Kind kind, bool nhwc = false, float alpha = 1, float beta = 0) {
    auto strides = [&](const std::vector<int64_t>& d) { return nhwc ? channels_last(d) : packed(d); };
    const auto xd = s.xdims(), wd = s.wdims(), yd = s.ydims();
    auto xv = pattern(count(xd), 1), wv = pattern(count(wd), 2), yv = pattern(count(yd), 3);
    std::vector<double> x(xv.begin(), xv.end()), w(wv.begin(), wv.end()), y(yv.begin(), yv.end());
    // CUDNN_CONVOLUTION: each filter mirrored in every spatial axis (its
    // spatial block reversed), then a cross-correlation.
    const size_t block = count(wd) / size_t(wd[0] * wd[1]);
    auto mirror = [&](std::vector<double>& v) {
      for (size_t f = 0; f < v.size(); f += block) std::reverse(v.begin() + long(f), v.begin() + long(f + block));
    };
    if (mode_ == CUDNN_CONVOLUTION) mirror(w);
    std::vector<double>& out = kind == kForward ? y : kind == kData ? x : w;
    const std::vector<double> old = out;
    std::fill(out.begin(), out.end(), 0.0);
    reference(s, kind, x, w, y);
    if (mode_ == CUDNN_CONVOLUTION && kind == kFilter) mirror(w);
    const auto& od = kind == kForward ? yd : kind == kData ? xd : wd;
    auto dev = [&](const std::vector<float>& v, const std::vector<int64_t>& dims) {
      return upload(to_strided(v, dims, strides(dims), span_of(dims, strides(dims))));
    };
    CUdeviceptr px = dev(xv, xd), pw = dev(wv, wd), py = dev(yv, yd);
    auto p = plan(s, kind, nhwc, alpha, beta);
    ASSERT_NE(nullptr, p);
    DNN_OK(execute(p, px, pw, py));
    const CUdeviceptr po = kind == kForward ? py : kind == kData ? px : pw;
    auto got = from_strided(download(po, span_of(od, strides(od))), od, strides(od));
    ASSERT_EQ(got.size(), out.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = alpha * out[i] + beta * old[i];
      ASSERT_NEAR(got[i], want, 1e-4 * (1 + std::fabs(want))) << "element " << i;
    }
  }
};

const Shape kPlain{2, 4, 6, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
const Shape kStrided{2, 3, 4, 1, {9, 8}, {3, 2}, {0, 1}, {2, 3}, {1, 1}};
const Shape kDilated{1, 2, 3, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {2, 2}};
const Shape kGrouped{2, 6, 4, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
const Shape kDepthwise{1, 4, 4, 4, {6, 5}, {3, 3}, {1, 1}, {2, 1}, {1, 1}};
const Shape k3d{1, 2, 3, 1, {4, 5, 4}, {3, 2, 3}, {1, 0, 1}, {1, 2, 1}, {1, 1, 1}};

TEST_F(ConvTest, ForwardMatchesTheReference) {
  for (const Shape* s : {&kPlain, &kStrided, &kDilated, &kGrouped, &kDepthwise, &k3d}) check(*s, kForward);
}

TEST_F(ConvTest, BackwardDataMatchesTheReference) {
  for (const Shape* s : {&kPlain, &kStrided, &kDilated, &kGrouped, &k3d}) check(*s, kData);
}

TEST_F(ConvTest, BackwardFilterMatchesTheReference) {
  for (const Shape* s : {&kPlain, &kStrided, &kDilated, &kGrouped, &k3d}) check(*s, kFilter);
}

TEST_F(ConvTest, ChannelsLastStrides) {
  check(kPlain, kForward, true);
  check(kGrouped, kData, true);
  check(kStrided, kFilter, true);
}

TEST_F(ConvTest, ConvolutionModeMirrorsTheFilter) {
  mode_ = CUDNN_CONVOLUTION;
  check(kStrided, kForward);
  check(k3d, kData);
  check(kGrouped, kFilter);
}

TEST_F(ConvTest, AlphaAndBetaBlendTheOutput) {
  check(kPlain, kForward, false, 2.0f, 0.5f);
  check(kStrided, kFilter, false, 1.0f, 1.0f);
}

TEST_F(ConvTest, RepeatedAndInterleavedShapesMatchTheReference) {
  // On one handle every shape and direction runs again after the others
  // have (oneDNN's primitive cache then hands back kept implementations),
  // and must match the reference as the first run did; then the same shape
  // with another blend and with channels-last operands (converted copies
  // rather than in place).
  for (int round = 0; round < 2; ++round) {
    for (const Shape* s : {&kPlain, &kStrided, &kGrouped, &k3d}) {
      check(*s, kForward);
      check(*s, kData);
      check(*s, kFilter);
    }
  }
  check(kPlain, kForward, false, 2.0f, 0.5f);
  check(kPlain, kForward, true);
  check(kPlain, kFilter, true);
}

TEST_F(ConvTest, HeuristicsOfferNoEngineForAnotherGraph) {
  // A graph whose operation is not a convolution: heuristics finalize with
  // no engine config, as cuDNN's do for a graph no engine supports.
  auto graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  auto op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  finalize(op);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  finalize(graph);
  auto heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  finalize(heur);
  int64_t n = -1;
  DNN_OK(d.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                    nullptr));
  EXPECT_EQ(0, n);
}

TEST_F(ConvTest, ExecuteRefusesAnOperandOutsideDeviceMemory) {
  auto p = plan(kPlain, kForward, false, 1, 0);
  ASSERT_NE(nullptr, p);
  CUdeviceptr x = upload(std::vector<float>(count(kPlain.xdims()))), w = upload(std::vector<float>(3));
  CUdeviceptr y = upload(std::vector<float>(count(kPlain.ydims())));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, execute(p, x, w, y));  // w is too short for the filter
}

TEST_F(ConvTest, HeuristicsOfferNoEngineForSizesThatDisagree) {
  // The output is one row short of what the convolution gives.
  int64_t engines = -1;
  y_rows_short_ = 1;
  EXPECT_EQ(nullptr, plan(kPlain, kForward, false, 1, 0, &engines));
  EXPECT_EQ(0, engines);
}

}  // namespace
}  // namespace rgpu::cpudnn::test
