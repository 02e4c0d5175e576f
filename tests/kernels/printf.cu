// Device printf from a few threads, with int, float, string and char arguments.
#include <cstdio>

extern "C" __global__ void hello_printf(int tag) {
  if (threadIdx.x % 16 == 0)
    printf("tag=%d thread=%d block=%d half=%.2f name=%s c=%c\n", tag, threadIdx.x, blockIdx.x, threadIdx.x * 0.5, "rgpu", 'z');
}
