// device_assert: a failed assert in a kernel prints its message on stderr
// as a GPU does, and the launch fails with cudaErrorAssert.
#include <cassert>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ void check(const int* data) {
  int v = data[blockIdx.x * blockDim.x + threadIdx.x];
  assert(v != 7);
}

int main() {
  int h[8] = {0, 1, 2, 3, 4, 5, 6, 8};
  h[4 + 3] = 7;  // block 1, thread 3
  int* d;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess || cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice) != cudaSuccess) {
    std::printf("FAIL device_assert: setup\n");
    return 1;
  }
  check<<<2, 4>>>(d);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaErrorAssert) {
    std::printf("FAIL device_assert: synchronize answered %s, want cudaErrorAssert\n", cudaGetErrorName(err));
    return 1;
  }
  std::printf("PASS device_assert\n");
  return 0;
}
