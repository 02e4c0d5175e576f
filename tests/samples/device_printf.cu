// device_printf: printf from kernels; the output appears at the next
// synchronization, before the host's own lines that follow it.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL device_printf: %s\n", cudaGetErrorName(err_));                \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void hello(int base) {
  printf("hello from block %d thread %d value %d\n", blockIdx.x, threadIdx.x, base + blockIdx.x * 10 + threadIdx.x);
}

__global__ void formats(const int* data) {
  if (threadIdx.x == 0) {
    printf("formats: int=%d neg=%d unsigned=%u hex=%x long=%lld float=%.3f double=%.2f char=%c str=%s\n",
           data[0], -data[1], 4000000000u, 0xbeef, 123456789012345LL, 1.5f, 2.25, 'Z', "ok");
  }
}

int main() {
  hello<<<2, 4>>>(100);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);

  int h[2] = {42, 7};
  int* d;
  CHECK(cudaMalloc(&d, sizeof h));
  CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  formats<<<1, 32>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);
  CHECK(cudaFree(d));
  // The test harness checks the lines above; this program can only check
  // that the launches succeeded.
  std::printf("PASS device_printf: 2 kernels printed\n");
  return 0;
}
