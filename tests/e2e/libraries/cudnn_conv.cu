// cuDNN end to end as PyTorch 2.6 drives it: a convolution through the
// backend API (tensors, convolution, operation, graph, heuristics, engine
// config, plan, variant pack; the tensor and convolution descriptors
// destroyed once the operation holds them, as cuDNN's frontend does), run
// twice on a stream, then a batch norm training step on its output, each
// checked against a reference computed here. Prints "PASS cudnn_conv" or
// "FAIL cudnn_conv: why". No kernels of its own: host code only.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(expr)                                                                      \
  do {                                                                                   \
    int s_ = static_cast<int>(expr);                                                     \
    if (s_ != 0) {                                                                       \
      std::printf("FAIL cudnn_conv: %s = %d (line %d)\n", #expr, s_, __LINE__);          \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

namespace {

const int64_t N = 2, C = 3, H = 6, W = 6, K = 4, R = 3;

cudnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  cudnnBackendDescriptor_t t = nullptr;
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int64_t align = 16;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  cudnnBackendFinalize(t);
  return t;
}

float value(size_t i, int salt) { return float(int((i * 37 + size_t(salt) * 11) % 19) - 9) / 8.0f; }

}  // namespace

int main() {
  if (cudnnGetVersion() / 10000 != 9) {
    std::printf("FAIL cudnn_conv: version %zu\n", cudnnGetVersion());
    return 1;
  }
  cudnnHandle_t h;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudnnCreate(&h));
  CHECK(cudnnSetStream(h, stream));

  // The operation: the frontend builds it, then drops its tensors.
  auto x = tensor('x', {N, C, H, W}), w = tensor('w', {K, C, R, R}), y = tensor('y', {N, K, H, W});
  cudnnBackendDescriptor_t conv, op, graph, heur, cfg, plan, pack;
  const int64_t sp = 2, one[2] = {1, 1};
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sp));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendFinalize(conv));
  float alpha = 1, beta = 0;
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 1, &conv));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  CHECK(cudnnBackendFinalize(op));
  for (auto d : {x, w, y, conv}) CHECK(cudnnBackendDestroyDescriptor(d));

  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
  CHECK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CHECK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
  CHECK(cudnnBackendFinalize(graph));
  int64_t engines = 0, n = 0;
  CHECK(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &n,
                                 &engines));
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_INSTANT;
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  CHECK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &graph));
  CHECK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
  CHECK(cudnnBackendFinalize(heur));
  int64_t configs = 0;
  CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &configs,
                                 nullptr));
  if (engines < 1 || configs < 1) {
    std::printf("FAIL cudnn_conv: engines=%lld configs=%lld\n", (long long)engines, (long long)configs);
    return 1;
  }
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
  CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg));
  CHECK(cudnnBackendDestroyDescriptor(heur));  // the config outlives it
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
  CHECK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CHECK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &cfg));
  CHECK(cudnnBackendFinalize(plan));
  int64_t ws_size = -1;
  CHECK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws_size));

  std::vector<float> hx(N * C * H * W), hw(K * C * R * R), hy(N * K * H * W);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = value(i, 1);
  for (size_t i = 0; i < hw.size(); ++i) hw[i] = value(i, 2);
  float *dx, *dw, *dy;
  void* ws = nullptr;
  CHECK(cudaMalloc(&dx, hx.size() * 4));
  CHECK(cudaMalloc(&dw, hw.size() * 4));
  CHECK(cudaMalloc(&dy, hy.size() * 4));
  if (ws_size > 0) CHECK(cudaMalloc(&ws, size_t(ws_size)));
  CHECK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dw, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
  const int64_t uids[3] = {'x', 'w', 'y'};
  void* ptrs[3] = {dx, dw, dy};
  CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
  CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  CHECK(cudnnBackendFinalize(pack));
  for (int round = 0; round < 2; ++round) CHECK(cudnnBackendExecute(h, plan, pack));
  CHECK(cudaMemcpyAsync(hy.data(), dy, hy.size() * 4, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double want = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < R; ++s) {
                const int64_t ii = i + r - 1, jj = j + s - 1;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                want += hx[((b * C + c) * H + ii) * W + jj] * hw[((k * C + c) * R + r) * R + s];
              }
          const float got = hy[((b * K + k) * H + i) * W + j];
          if (std::fabs(got - want) > 1e-4 * (1 + std::fabs(want))) {
            std::printf("FAIL cudnn_conv: y[%lld,%lld,%lld,%lld] = %f, want %f\n", (long long)b, (long long)k,
                        (long long)i, (long long)j, got, want);
            return 1;
          }
        }

  // Batch norm training on y: the saved mean is each channel's mean.
  cudnnTensorDescriptor_t yd, pd;
  const int ydims[4] = {int(N), int(K), int(H), int(W)}, ystr[4] = {int(K * H * W), int(H * W), int(W), 1};
  const int pdims[4] = {1, int(K), 1, 1}, pstr[4] = {int(K), 1, 1, 1};
  CHECK(cudnnCreateTensorDescriptor(&yd));
  CHECK(cudnnCreateTensorDescriptor(&pd));
  CHECK(cudnnSetTensorNdDescriptor(yd, CUDNN_DATA_FLOAT, 4, ydims, ystr));
  CHECK(cudnnSetTensorNdDescriptor(pd, CUDNN_DATA_FLOAT, 4, pdims, pstr));
  size_t bn_ws = 1;
  CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN,
                                                                 yd, yd, yd, pd, nullptr, &bn_ws));
  std::vector<float> ones(K, 1.0f), zeros(K, 0.0f), mean(K);
  float *scale, *bias, *out, *save_mean, *save_inv;
  CHECK(cudaMalloc(&scale, K * 4));
  CHECK(cudaMalloc(&bias, K * 4));
  CHECK(cudaMalloc(&save_mean, K * 4));
  CHECK(cudaMalloc(&save_inv, K * 4));
  CHECK(cudaMalloc(&out, hy.size() * 4));
  CHECK(cudaMemcpy(scale, ones.data(), K * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bias, zeros.data(), K * 4, cudaMemcpyHostToDevice));
  void* bn_wsp = nullptr;
  if (bn_ws > 0) CHECK(cudaMalloc(&bn_wsp, bn_ws));
  CHECK(cudnnBatchNormalizationForwardTrainingEx(h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &alpha, &beta,
                                                 yd, dy, nullptr, nullptr, yd, out, pd, scale, bias, 0.1, nullptr,
                                                 nullptr, 1e-5, save_mean, save_inv, nullptr, bn_wsp, bn_ws, nullptr,
                                                 0));
  CHECK(cudaMemcpyAsync(mean.data(), save_mean, K * 4, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (int64_t k = 0; k < K; ++k) {
    double want = 0;
    for (int64_t b = 0; b < N; ++b)
      for (int64_t i = 0; i < H * W; ++i) want += hy[(b * K + k) * H * W + i];
    want /= double(N * H * W);
    if (std::fabs(mean[k] - want) > 1e-4) {
      std::printf("FAIL cudnn_conv: batch norm mean[%lld] = %f, want %f\n", (long long)k, mean[k], want);
      return 1;
    }
  }
  for (auto d : {op, graph, cfg, plan, pack}) CHECK(cudnnBackendDestroyDescriptor(d));
  CHECK(cudnnDestroyTensorDescriptor(yd));
  CHECK(cudnnDestroyTensorDescriptor(pd));
  CHECK(cudnnDestroy(h));
  std::printf("PASS cudnn_conv\n");
  return 0;
}
