// A client for the fault tests. Modes:
//   meminfo  print "free=<bytes> total=<bytes>" and exit
//   hog      allocate, print "ready pid=<pid>", then copy large buffers forever
//   spin     print "ready pid=<pid>", then make sync calls until one fails;
//            print "error=<name> after_ms=<ms>" and exit 3
//   init     call cuInit and print "init=<name> after_ms=<ms>"
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
  std::fprintf(stderr, "usage: fault_client meminfo|hog|spin|init\n");
  return 2;
}
