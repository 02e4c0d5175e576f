// rgpu-pool-startup: how long a program takes from its start to its first
// completed device call, for benchmarks/pool/startup.sh. The script writes
// the wall time it starts the program at (nanoseconds since the epoch) in
// RGPU_BENCH_START_NS; this program does cuInit, makes a context, allocates
// 1 MiB (the first call that reaches a device) and prints
// "first_call_ms=X" measured from then.
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main() {
  const char* start = std::getenv("RGPU_BENCH_START_NS");
  if (start == nullptr) {
    std::fprintf(stderr, "rgpu-pool-startup: RGPU_BENCH_START_NS is not set\n");
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuCtxCreate(&ctx, nullptr, 0, dev) != CUDA_SUCCESS || cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS) {
    std::fprintf(stderr, "rgpu-pool-startup: the first call failed\n");
    return 1;
  }
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::printf("first_call_ms=%.3f\n", static_cast<double>(now - std::atoll(start)) / 1e6);
  return 0;
}
