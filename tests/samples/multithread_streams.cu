// multithread_streams: four host threads share the device, each with its own
// stream, buffers and sequence of kernels and copies; every thread checks its
// own results.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

constexpr int THREADS = 4;
constexpr int ROUNDS = 10;
constexpr int N = 16384;

// Records the first error of a thread instead of exiting from inside it.
#define TRY(call)                                                                      \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "thread %d: %s:%d: %s: %s\n", id, __FILE__, __LINE__, #call, \
                   cudaGetErrorString(err_));                                          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

__global__ void step(int* p, int mul, int add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * mul + add;
}

// One worker's whole life; returns the number of problems it found.
static int worker(int id) {
  cudaStream_t stream;
  TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int *d, *h;
  TRY(cudaMalloc(&d, N * sizeof(int)));
  TRY(cudaMallocHost(&h, N * sizeof(int)));
  std::vector<int> expected(N);
  for (int i = 0; i < N; ++i) h[i] = expected[i] = i % 97 + id;
  TRY(cudaMemcpyAsync(d, h, N * sizeof(int), cudaMemcpyHostToDevice, stream));
  int problems = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    int mul = (r + id) % 3 == 0 ? -1 : 1, add = id * 1000 + r;
    step<<<(N + 255) / 256, 256, 0, stream>>>(d, mul, add, N);
    TRY(cudaGetLastError());
    for (int i = 0; i < N; ++i) expected[i] = expected[i] * mul + add;
    if (r % 3 == 2) {  // check along the way too, not only at the end
      TRY(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
      TRY(cudaStreamSynchronize(stream));
      for (int i = 0; i < N; ++i) problems += h[i] != expected[i];
    }
  }
  TRY(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
  TRY(cudaStreamSynchronize(stream));
  for (int i = 0; i < N; ++i) {
    if (h[i] != expected[i]) {
      if (problems < 3) std::fprintf(stderr, "thread %d: h[%d] = %d, expected %d\n", id, i, h[i], expected[i]);
      ++problems;
    }
  }
  TRY(cudaStreamDestroy(stream));
  TRY(cudaFree(d));
  TRY(cudaFreeHost(h));
  return problems;
}

int main() {
  // Create the context before the threads start, as most programs do.
  if (cudaFree(nullptr) != cudaSuccess) {
    std::printf("FAIL multithread_streams: no device\n");
    return 1;
  }
  std::vector<int> results(THREADS, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < THREADS; ++t) threads.emplace_back([t, &results] { results[t] = worker(t); });
  for (auto& t : threads) t.join();
  int problems = 0;
  for (int t = 0; t < THREADS; ++t) {
    if (results[t] != 0) std::fprintf(stderr, "thread %d: %d problems\n", t, results[t]);
    problems += results[t];
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (problems != 0 || e != cudaSuccess) {
    std::printf("FAIL multithread_streams: %d problems, %s\n", problems, cudaGetErrorName(e));
    return 1;
  }
  std::printf("PASS multithread_streams: %d threads x %d rounds\n", THREADS, ROUNDS);
  return 0;
}
