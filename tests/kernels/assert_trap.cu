// Device assert and trap, for fault reporting.
#include <cassert>

extern "C" __global__ void assert_positive(const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(in[i] > 0);
}

extern "C" __global__ void spin_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}
