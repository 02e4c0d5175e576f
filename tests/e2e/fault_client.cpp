// A client for the fault tests. Modes:
//   meminfo  print "free=<bytes> total=<bytes>" and exit
//   hog      allocate, print "ready pid=<pid>", then copy large buffers forever
//   spin     print "ready pid=<pid>", then make sync calls until one fails;
//            print "error=<name> after_ms=<ms>" and exit 3
//   init     call cuInit and print "init=<name> after_ms=<ms>"
//   victim KIND
//            print "ready pid=<pid>" after the first round of KIND, then
//            repeat it until killed. KIND: htod64m, dtoh64m (sync copies of
//            64 MiB), async1m (pinned 1 MiB copies both ways on a stream),
//            small (a stream of small sync calls), memset (async memsets)
//   steady   print "ready", then copy 64 KiB up and back and check every
//            byte, forever; print "maxgap_ms=<ms>" whenever the longest
//            time between two checked rounds grows, "wrong" or
//            "error=<name>" (and exit 3) on the first bad round
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* err_name(CUresult r) {
  const char* n = nullptr;
  if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) return "?";
  return n;
}

int fail(const char* what, CUresult r) {
  std::printf("failed %s: %s\n", what, err_name(r));
  return 2;
}

using Clock = std::chrono::steady_clock;

long long ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// One round of a victim's work; false when a call failed.
bool victim_round(const std::string& kind, CUdeviceptr d, unsigned char* host, CUstream stream, unsigned i) {
  const size_t big = 64 << 20, mid = 1 << 20;
  if (kind == "htod64m") return cuMemcpyHtoD(d, host, big) == CUDA_SUCCESS;
  if (kind == "dtoh64m") return cuMemcpyDtoH(host, d, big) == CUDA_SUCCESS;
  if (kind == "async1m") {
    for (unsigned k = 0; k < 16; ++k) {
      const size_t at = (k % 8) * mid;
      if (cuMemcpyHtoDAsync(d + at, host + at, mid, stream) != CUDA_SUCCESS) return false;
      if (cuMemcpyDtoHAsync(host + at, d + at, mid, stream) != CUDA_SUCCESS) return false;
    }
    return cuStreamSynchronize(stream) == CUDA_SUCCESS;
  }
  if (kind == "small") {
    for (unsigned k = 0; k < 64; ++k) {
      size_t free_b = 0, total = 0;
      if (cuMemGetInfo(&free_b, &total) != CUDA_SUCCESS) return false;
      if (cuMemcpyHtoD(d + 64 * k, host, 64) != CUDA_SUCCESS) return false;
    }
    return true;
  }
  if (kind == "memset") {
    for (unsigned k = 0; k < 64; ++k) {
      if (cuMemsetD8Async(d, static_cast<unsigned char>(i + k), big, stream) != CUDA_SUCCESS) return false;
    }
    return cuStreamSynchronize(stream) == CUDA_SUCCESS;
  }
  return false;
}

int victim(const std::string& kind) {
  CUdeviceptr d;
  CUresult r;
  if ((r = cuMemAlloc(&d, 64 << 20)) != CUDA_SUCCESS) return fail("alloc", r);
  void* pinned = nullptr;
  if ((r = cuMemHostAlloc(&pinned, 64 << 20, 0)) != CUDA_SUCCESS) return fail("host alloc", r);
  auto* host = static_cast<unsigned char*>(pinned);
  std::memset(host, 0x5a, 64 << 20);
  CUstream stream;
  if ((r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) return fail("stream", r);
  for (unsigned i = 0;; ++i) {
    if (!victim_round(kind, d, host, stream, i)) {
      std::printf("failed round %u of %s\n", i, kind.c_str());
      return 2;
    }
    if (i == 0) std::printf("ready pid=%d\n", static_cast<int>(getpid()));
  }
}

int steady() {
  const size_t n = 64 << 10;
  CUdeviceptr d;
  CUresult r;
  if ((r = cuMemAlloc(&d, n)) != CUDA_SUCCESS) return fail("alloc", r);
  std::vector<unsigned char> up(n), down(n);
  long long max_gap = 0;
  auto last = Clock::now();
  for (unsigned i = 0;; ++i) {
    for (size_t k = 0; k < n; ++k) up[k] = static_cast<unsigned char>(i * 131 + k * 7);
    if ((r = cuMemcpyHtoD(d, up.data(), n)) != CUDA_SUCCESS || (r = cuMemcpyDtoH(down.data(), d, n)) != CUDA_SUCCESS) {
      std::printf("error=%s after_ms=%lld\n", err_name(r), ms_since(last));
      return 3;
    }
    if (up != down) {
      std::printf("wrong round=%u\n", i);
      return 3;
    }
    const long long gap = ms_since(last);
    last = Clock::now();
    if (i == 0) std::printf("ready\n");
    else if (gap > max_gap) std::printf("maxgap_ms=%lld\n", max_gap = gap);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string mode = argc > 1 ? argv[1] : "";
  auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  CUresult r = cuInit(0);
  if (mode == "init") {
    std::printf("init=%s after_ms=%lld\n", err_name(r), static_cast<long long>(ms()));
    return 0;
  }
  if (r != CUDA_SUCCESS) return fail("cuInit", r);
  CUcontext ctx;
  if ((r = cuDevicePrimaryCtxRetain(&ctx, 0)) != CUDA_SUCCESS) return fail("retain", r);
  if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) return fail("set current", r);

  if (mode == "meminfo") {
    size_t free_b = 0, total = 0;
    if ((r = cuMemGetInfo(&free_b, &total)) != CUDA_SUCCESS) return fail("meminfo", r);
    std::printf("free=%zu total=%zu\n", free_b, total);
    return 0;
  }
  if (mode == "hog") {
    const size_t n = 64 << 20;
    CUdeviceptr d[4];
    for (auto& p : d) {
      if ((r = cuMemAlloc(&p, n)) != CUDA_SUCCESS) return fail("alloc", r);
    }
    std::vector<unsigned char> buf(n, 0x42);
    std::printf("ready pid=%d\n", static_cast<int>(getpid()));
    for (unsigned i = 0;; ++i) {
      if ((r = cuMemcpyHtoD(d[i % 4], buf.data(), n)) != CUDA_SUCCESS) return fail("copy", r);
    }
  }
  if (mode == "spin") {
    CUdeviceptr d;
    if ((r = cuMemAlloc(&d, 1 << 20)) != CUDA_SUCCESS) return fail("alloc", r);
    std::vector<unsigned char> buf(1 << 20, 1);
    std::printf("ready pid=%d\n", static_cast<int>(getpid()));
    for (;;) {
      auto t = std::chrono::steady_clock::now();
      r = cuMemcpyHtoD(d, buf.data(), buf.size());
      if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
      if (r != CUDA_SUCCESS) {
        long long waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
        std::printf("error=%s after_ms=%lld\n", err_name(r), waited);
        return 3;
      }
    }
  }
  if (mode == "victim" && argc > 2) return victim(argv[2]);
  if (mode == "steady") return steady();
  std::fprintf(stderr, "usage: fault_client meminfo|hog|spin|init|steady|victim KIND\n");
  return 2;
}
