// A small runtime API program for the end-to-end check of librgpu's runtime:
// cudaMalloc, cudaMemcpy, a <<<>>> launch, a __constant__ symbol, last-error
// rules, and a sticky fault cleared by cudaDeviceReset. Prints PASS or FAIL.
#include <cuda_runtime.h>

#include <cstdio>

__constant__ float scale;

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + scale * b[i];
}

__global__ void write_far(int* p) { p[1 << 28] = 1; }

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("FAIL runtime_vector_add: %s: %s\n", #call, cudaGetErrorName(e_));     \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

int main() {
  const int n = 1000;
  float ha[n], hb[n], hc[n];
  for (int i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i);
    hb[i] = 1.0f;
  }
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyDefault));
  float s = 2.0f;
  CHECK(cudaMemcpyToSymbol(scale, &s, sizeof s));
  vector_add<<<(n + 127) / 128, 128>>>(a, b, c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(hc, c, sizeof hc, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (hc[i] != ha[i] + 2.0f) {
      std::printf("FAIL runtime_vector_add: c[%d] = %f\n", i, hc[i]);
      return 1;
    }
  }
  // A launch error is the thread's last error until read.
  vector_add<<<1, 4096>>>(a, b, c, n);
  if (cudaPeekAtLastError() != cudaErrorInvalidConfiguration || cudaGetLastError() != cudaErrorInvalidConfiguration ||
      cudaGetLastError() != cudaSuccess) {
    std::printf("FAIL runtime_vector_add: launch error not reported once\n");
    return 1;
  }
  // A fault is sticky until the device is reset.
  write_far<<<1, 1>>>(reinterpret_cast<int*>(a));
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaErrorIllegalAddress || cudaGetLastError() != cudaErrorIllegalAddress ||
      cudaGetLastError() != cudaErrorIllegalAddress) {
    std::printf("FAIL runtime_vector_add: fault gave %s\n", cudaGetErrorName(e));
    return 1;
  }
  CHECK(cudaDeviceReset());
  CHECK(cudaGetLastError());
  CHECK(cudaMalloc(&a, 16));
  CHECK(cudaFree(a));
  std::printf("PASS runtime_vector_add\n");
  return 0;
}
