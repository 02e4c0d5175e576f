// A small steady workload for the metrics tests: copies 1 MiB to and from
// the device in a loop, holding 8 MiB, until SECONDS pass or the file STOP
// exists. Usage: metrics_client SECONDS [STOP]
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1;
  const char* stop = argc > 2 ? argv[2] : nullptr;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr buf;
  constexpr size_t kChunk = 1 << 20;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuMemAlloc(&buf, 8 * kChunk) != CUDA_SUCCESS) {
    std::fprintf(stderr, "metrics_client: no device\n");
    return 1;
  }
  std::vector<unsigned char> host(kChunk, 7), back(kChunk);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long rounds = 0;
  do {
    if (cuMemcpyHtoD(buf, host.data(), kChunk) != CUDA_SUCCESS ||
        cuMemcpyDtoH(back.data(), buf, kChunk) != CUDA_SUCCESS || back[kChunk - 1] != 7) {
      std::fprintf(stderr, "metrics_client: copy failed\n");
      return 1;
    }
    ++rounds;
    usleep(20 * 1000);
  } while (std::chrono::steady_clock::now() < until && !(stop && access(stop, F_OK) == 0));
  cuMemFree(buf);
  std::printf("metrics_client: %ld rounds\n", rounds);
  return 0;
}
