// A client for the pool's end-to-end tests (pool_e2e_test.cpp), linked
// against rgpu's client library and started with RGPU_POOL (or RGPU_SERVER
// and RGPU_LEASE): initialises, allocates 1 MiB on each device it sees,
// prints "ready count=N", then holds its session until stdin closes. A
// failed cuInit prints "init=NAME" and exits 3.
#include <cuda.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    cuGetErrorName(r, &name);
    std::printf("init=%s\n", name);
    return 3;
  }
  int count = 0;
  cuDeviceGetCount(&count);
  std::vector<CUcontext> contexts;
  for (int d = 0; d < count; ++d) {
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    if (cuDeviceGet(&dev, d) != CUDA_SUCCESS || cuCtxCreate(&ctx, nullptr, 0, dev) != CUDA_SUCCESS ||
        cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS) {
      std::printf("FAIL device %d\n", d);
      return 1;
    }
    contexts.push_back(ctx);
  }
  std::printf("ready count=%d\n", count);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  std::printf("done\n");
  return 0;
}
