// The kernel the multi-architecture program launches (tests/e2e/multiarch).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void scale(float* x, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

// Defined in unused.cu: its fatbin is registered but never loaded.
void never_called();

int main(int argc, char** argv) {
  const int n = 1000;
  float host[n];
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  float* dev = nullptr;
  if (cudaMalloc(&dev, sizeof host) != cudaSuccess) return std::printf("FAIL malloc\n"), 1;
  cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(dev, 3.0f, n);
  if (cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) return std::printf("FAIL copy\n"), 1;
  for (int i = 0; i < n; ++i)
    if (host[i] != 3.0f * i) return std::printf("FAIL value %d: %f\n", i, host[i]), 1;
  if (argc > 1) never_called();
  cudaFree(dev);
  std::printf("PASS multiarch\n");
  return 0;
}
