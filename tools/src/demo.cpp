// rgpu-demo: a small CUDA driver API program, written as any user would, that
// shows what rgpu does: device queries, allocation, copies with checks, and
// the round-trip latency of a synchronous call.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                               \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                     \
      const char* name_ = nullptr;                                                \
      cuGetErrorName(r_, &name_);                                                 \
      std::fprintf(stderr, "demo: %s failed: %s\n", #call, name_ ? name_ : "?"); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

using Clock = std::chrono::steady_clock;

static double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

int main() {
  CHECK(cuInit(0));
  int version = 0, count = 0;
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGetCount(&count));
  std::printf("driver API %d.%d, %d device(s)\n", version / 1000, version % 1000 / 10, count);
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  char name[128];
  int major = 0, minor = 0, sms = 0;
  size_t total = 0;
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK(cuDeviceTotalMem(&total, dev));
  std::printf("device 0: %s, compute capability %d.%d, %d multiprocessors, %.1f GiB\n", name, major, minor, sms,
              total / double(1 << 30));

  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));

  const size_t n = 16 << 20;
  std::vector<unsigned char> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, n));
  auto t0 = Clock::now();
  CHECK(cuMemcpyHtoD(d, host.data(), n));
  double up = us_since(t0);
  t0 = Clock::now();
  CHECK(cuMemcpyDtoH(back.data(), d, n));
  double down = us_since(t0);
  bool same = std::equal(host.begin(), host.end(), back.begin());
  std::printf("copied 16 MiB to the device and back: %s (up %.0f MB/s, down %.0f MB/s)\n",
              same ? "contents match" : "MISMATCH", n / up, n / down);
  CHECK(cuMemsetD32(d, 0x01020304u, n / 4));
  CHECK(cuMemcpyDtoH(back.data(), d, 16));
  std::printf("memset: first word now 0x%02x%02x%02x%02x\n", back[3], back[2], back[1], back[0]);

  // Round trip of a small synchronous call.
  const int iters = 2000;
  std::vector<double> lat;
  lat.reserve(iters);
  size_t free_b, total_b;
  for (int i = 0; i < 100; ++i) CHECK(cuMemGetInfo(&free_b, &total_b));
  for (int i = 0; i < iters; ++i) {
    t0 = Clock::now();
    CHECK(cuMemGetInfo(&free_b, &total_b));
    lat.push_back(us_since(t0));
  }
  std::sort(lat.begin(), lat.end());
  std::printf("synchronous call round trip (cuMemGetInfo, %d calls): p50 %.1f us, p99 %.1f us\n", iters,
              lat[iters / 2], lat[iters * 99 / 100]);

  // Async calls are batched: many event records cost one round trip.
  CUstream s;
  CUevent a, b;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuEventCreate(&a, 0));
  CHECK(cuEventCreate(&b, 0));
  t0 = Clock::now();
  CHECK(cuEventRecord(a, s));
  for (int i = 0; i < 1000; ++i) CHECK(cuMemsetD8Async(d, static_cast<unsigned char>(i), 4096, s));
  CHECK(cuEventRecord(b, s));
  double enqueue = us_since(t0);
  CHECK(cuStreamSynchronize(s));
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, a, b));
  std::printf("1000 async memsets: enqueued in %.0f us on the client, %.3f ms on the device\n", enqueue, ms);

  CHECK(cuEventDestroy(a));
  CHECK(cuEventDestroy(b));
  CHECK(cuStreamDestroy(s));
  CHECK(cuMemFree(d));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  std::printf("done: %s\n", same ? "ok" : "FAILED");
  return same ? 0 : 1;
}
