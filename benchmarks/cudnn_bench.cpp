// rgpu-cudnn-bench: the CPU device's cuDNN stand-in called directly (no
// rgpud, no transport), per call of a small CNN's training step: convolution
// forward, backward data and backward filter through the backend API as
// cuDNN's frontend builds them, and batch norm training forward and backward
// through the legacy API. Each iteration queues one call on the handle's
// stream and waits for it, so a time is the call's whole cost in the
// stand-in: the copies in and out, the layout conversions and oneDNN.
//
//   rgpu-cudnn-bench [google benchmark flags]
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define BENCH_CHECK(call)                                                     \
  do {                                                                        \
    if (auto r_ = (call); r_ != 0) {                                          \
      std::fprintf(stderr, "rgpu-cudnn-bench: %s failed: %d\n", #call, int(r_)); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

CUcontext context() {
  static CUcontext ctx = [] {
    BENCH_CHECK(cuInit(0));
    CUdevice dev;
    BENCH_CHECK(cuDeviceGet(&dev, 0));
    CUcontext c = nullptr;
    BENCH_CHECK(cuDevicePrimaryCtxRetain(&c, dev));
    return c;
  }();
  BENCH_CHECK(cuCtxSetCurrent(ctx));
  return ctx;
}

std::vector<int64_t> packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  return s;
}

size_t count(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= size_t(d);
  return n;
}

// A handle, device buffers and descriptors, released at the end of a case.
class Session {
 public:
  Session() {
    context();
    BENCH_CHECK(cudnnCreate(&h_));
  }
  ~Session() {
    cuCtxSynchronize();
    for (auto d : descs_) cudnnBackendDestroyDescriptor(d);
    for (auto t : tensors_) cudnnDestroyTensorDescriptor(t);
    for (auto p : buffers_) cuMemFree(p);
    cudnnDestroy(h_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  cudnnHandle_t handle() const { return h_; }

  CUdeviceptr buffer(size_t floats, float salt) {
    std::vector<float> v(floats);
    for (size_t i = 0; i < floats; ++i) v[i] = float(int((i * 37 + size_t(salt * 11)) % 19) - 9) / 8.0f;
    CUdeviceptr p = 0;
    BENCH_CHECK(cuMemAlloc(&p, floats * 4));
    BENCH_CHECK(cuMemcpyHtoD(p, v.data(), floats * 4));
    buffers_.push_back(p);
    return p;
  }

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    BENCH_CHECK(cudnnBackendCreateDescriptor(type, &d));
    descs_.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t n, const void* v) {
    BENCH_CHECK(cudnnBackendSetAttribute(d, name, type, n, v));
  }
  cudnnBackendDescriptor_t tensor(int64_t uid, const std::vector<int64_t>& dims) {
    auto t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const int64_t align = 16;
    const auto strides = packed(dims);
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    BENCH_CHECK(cudnnBackendFinalize(t));
    return t;
  }
  cudnnTensorDescriptor_t legacy(std::vector<int> dims) {
    cudnnTensorDescriptor_t t = nullptr;
    BENCH_CHECK(cudnnCreateTensorDescriptor(&t));
    std::vector<int> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    BENCH_CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, int(dims.size()), dims.data(), strides.data()));
    tensors_.push_back(t);
    return t;
  }

 private:
  cudnnHandle_t h_ = nullptr;
  std::vector<CUdeviceptr> buffers_;
  std::vector<cudnnBackendDescriptor_t> descs_;
  std::vector<cudnnTensorDescriptor_t> tensors_;
};

enum Kind { kForward, kData, kFilter };

// Args: kind, N, C, K, H (= W). A 3x3 convolution, padding 1, stride 1.
void Conv(benchmark::State& state) {
  const auto kind = Kind(state.range(0));
  const int64_t n = state.range(1), c = state.range(2), k = state.range(3), hw = state.range(4);
  Session s;
  const std::vector<int64_t> xd{n, c, hw, hw}, wd{k, c, 3, 3}, yd{n, k, hw, hw};
  auto x = s.tensor('x', xd), w = s.tensor('w', wd), y = s.tensor('y', yd);
  auto conv = s.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t sp = 2, pad[2] = {1, 1}, one[2] = {1, 1};
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  s.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sp);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one);
  s.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one);
  BENCH_CHECK(cudnnBackendFinalize(conv));
  const cudnnBackendDescriptorType_t types[] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
  const cudnnBackendAttributeName_t names[3][4] = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC}};
  auto op = s.make(types[kind]);
  s.set(op, names[kind][0], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  s.set(op, names[kind][1], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  s.set(op, names[kind][2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  s.set(op, names[kind][3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
  BENCH_CHECK(cudnnBackendFinalize(op));
  cudnnHandle_t h = s.handle();
  auto graph = s.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  s.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  s.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  BENCH_CHECK(cudnnBackendFinalize(graph));
  auto heur = s.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_INSTANT;
  s.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  s.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
  BENCH_CHECK(cudnnBackendFinalize(heur));
  auto cfg = s.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t got = 0;
  BENCH_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                       &cfg));
  auto plan = s.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  s.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  s.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  BENCH_CHECK(cudnnBackendFinalize(plan));
  auto pack = s.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {'x', 'w', 'y'};
  void* ptrs[3] = {(void*)s.buffer(count(xd), 1), (void*)s.buffer(count(wd), 2), (void*)s.buffer(count(yd), 3)};
  void* ws = nullptr;
  s.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  s.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  s.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  BENCH_CHECK(cudnnBackendFinalize(pack));
  for (auto _ : state) {
    BENCH_CHECK(cudnnBackendExecute(h, plan, pack));
    BENCH_CHECK(cuCtxSynchronize());
  }
}

// Args: backward (0: training forward, 1: backward), N, C, H (= W).
void BatchNorm(benchmark::State& state) {
  const bool backward = state.range(0) != 0;
  const int n = int(state.range(1)), c = int(state.range(2)), hw = int(state.range(3));
  Session s;
  const size_t elems = size_t(n) * size_t(c) * size_t(hw) * size_t(hw);
  auto xd = s.legacy({n, c, hw, hw}), pd = s.legacy({1, c, 1, 1});
  auto x = (void*)s.buffer(elems, 1), y = (void*)s.buffer(elems, 2), dy = (void*)s.buffer(elems, 3),
       dx = (void*)s.buffer(elems, 4);
  auto scale = (void*)s.buffer(size_t(c), 5), bias = (void*)s.buffer(size_t(c), 6),
       rm = (void*)s.buffer(size_t(c), 7), rv = (void*)s.buffer(size_t(c), 8), sm = (void*)s.buffer(size_t(c), 9),
       siv = (void*)s.buffer(size_t(c), 10), ds = (void*)s.buffer(size_t(c), 11),
       db = (void*)s.buffer(size_t(c), 12);
  const float one = 1, zero = 0;
  cudnnHandle_t h = s.handle();
  auto forward = [&] {
    BENCH_CHECK(cudnnBatchNormalizationForwardTrainingEx(h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one,
                                                         &zero, xd, x, nullptr, nullptr, xd, y, pd, scale, bias, 0.1,
                                                         rm, rv, 1e-5, sm, siv, nullptr, nullptr, 0, nullptr, 0));
  };
  forward();  // saved statistics for backward
  for (auto _ : state) {
    if (backward) {
      BENCH_CHECK(cudnnBatchNormalizationBackwardEx(h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero,
                                                    &one, &zero, xd, x, nullptr, nullptr, xd, dy, nullptr, nullptr,
                                                    xd, dx, pd, scale, bias, ds, db, 1e-5, sm, siv, nullptr, nullptr,
                                                    0, nullptr, 0));
    } else {
      forward();
    }
    BENCH_CHECK(cuCtxSynchronize());
  }
}

// tests/pytorch/test_cnn.py's network (docs/pytorch.md, "What a CNN step
// costs"): conv1 3->8 at 32x32, bn1, conv2 8->16 at 16x16, batch 16; and
// the wider 3->16->32 at 32x32.
void ConvArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "n", "c", "k", "hw"});
  for (int kind : {kForward, kData, kFilter}) {
    for (auto shape : std::vector<std::vector<int64_t>>{{16, 3, 8, 32}, {16, 8, 16, 16}, {16, 3, 16, 32},
                                                        {16, 16, 32, 32}}) {
      if (kind == kData && shape[1] == 3) continue;  // a first layer has no data gradient
      b->Args({kind, shape[0], shape[1], shape[2], shape[3]});
    }
  }
}

void BatchNormArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"bwd", "n", "c", "hw"});
  for (int bwd : {0, 1}) {
    for (auto shape : std::vector<std::vector<int64_t>>{{16, 8, 32}, {16, 16, 32}}) {
      b->Args({bwd, shape[0], shape[1], shape[2]});
    }
  }
}

BENCHMARK(Conv)->Apply(ConvArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BatchNorm)->Apply(BatchNormArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
