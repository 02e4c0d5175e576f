// graph_capture: a CUDA graph captured across two streams (memset, copies,
// kernels, an event fork and join), instantiated once and replayed ten times
// with new inputs; a copy from pageable host memory in a capture reads it
// at each replay.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL graph_capture: %s\n", cudaGetErrorName(err_));                \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::printf("FAIL graph_capture: %s (line %d)\n", #cond, __LINE__);             \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void scale(const float* in, float* out, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * k;
}

__global__ void add_into(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += a[i] + b[i];
}

int main() {
  const int n = 1 << 14;
  const size_t bytes = n * sizeof(float);
  float *input, *a, *b, *out, *result;
  CHECK(cudaMalloc(&input, bytes));
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMalloc(&result, bytes));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  std::vector<float> host(n), back(n);
  CHECK(cudaMemset(result, 0xff, bytes));

  // out = 0; a = input; (s2) b = 3 * input; out += a + b; result = out
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(s1, &status));
  EXPECT(status == cudaStreamCaptureStatusActive);
  CHECK(cudaMemsetAsync(out, 0, bytes, s1));
  CHECK(cudaMemcpyAsync(a, input, bytes, cudaMemcpyDeviceToDevice, s1));
  CHECK(cudaEventRecord(fork, s1));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  scale<<<(n + 255) / 256, 256, 0, s2>>>(input, b, 3.0f, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(join, s2));
  CHECK(cudaStreamWaitEvent(s1, join, 0));
  add_into<<<(n + 255) / 256, 256, 0, s1>>>(a, b, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(result, out, bytes, cudaMemcpyDeviceToDevice, s1));
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s1, &graph));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT(nodes == 5);
  // Captured, not run: result still holds its old bytes.
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(back.data(), result, bytes, cudaMemcpyDeviceToHost));
  unsigned first;
  std::memcpy(&first, &back[0], 4);
  EXPECT(first == 0xffffffffu);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  CHECK(cudaGraphUpload(exec, s1));
  for (int r = 0; r < 10; ++r) {
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>((i % 100) + r);
    CHECK(cudaMemcpy(input, host.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpy(back.data(), result, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      if (back[i] != 4.0f * host[i]) {
        std::printf("FAIL graph_capture: replay %d element %d is %f, expected %f\n", r, i, back[i], 4.0f * host[i]);
        return 1;
      }
    }
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));

  // A copy from pageable host memory is recorded too, as CUDA records it:
  // each replay reads the buffer as it is when the graph gets there.
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(a, host.data(), bytes, cudaMemcpyHostToDevice, s1));
  cudaGraph_t upload;
  CHECK(cudaStreamEndCapture(s1, &upload));
  cudaGraphExec_t upload_exec;
  CHECK(cudaGraphInstantiate(&upload_exec, upload, nullptr, nullptr, 0));
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i * 3 + r);
    CHECK(cudaGraphLaunch(upload_exec, s1));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpy(back.data(), a, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) EXPECT(back[i] == host[i]);
  }
  CHECK(cudaGraphExecDestroy(upload_exec));
  CHECK(cudaGraphDestroy(upload));
  CHECK(cudaStreamIsCapturing(s1, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);

  std::printf("PASS graph_capture: 10 replays, %zu nodes\n", nodes);
  return 0;
}
