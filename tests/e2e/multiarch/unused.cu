// A second translation unit, so a second fatbin: registered at start up,
// never launched, so never uploaded (tests/e2e/multiarch).
#include <cuda_runtime.h>

__global__ void fill(int* x, int v) { x[threadIdx.x] = v; }

void never_called() { fill<<<1, 32>>>(nullptr, 1); }
