// A second client for the kernel fault tests, run with librgpu preloaded and
// RGPU_SERVER set. It prints "key=value" lines. Modes:
//   work     run vec_add and check it: "work=ok" or "work=<error or mismatch>"
//   oob      a kernel writes out of bounds; prints what the synchronize and
//            later calls in the context return, then "ready", and stays
//            until stdin closes (at most 30 s) so its context stays faulted
//   assert   a device assert fails; prints what synchronize returns, twice
//   spin     a kernel that never ends; prints "sync=<error> after_ms=<ms>"
#include <cuda.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* err_name(CUresult r) {
  const char* n = nullptr;
  if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) return "?";
  return n;
}

std::string read_image(const char* name) {
  std::ifstream f(std::string(RGPU_E2E_KERNEL_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int fail(const char* what, CUresult r) {
  std::printf("failed %s: %s\n", what, err_name(r));
  return 2;
}

CUresult vec_add(CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n) {
  void* params[] = {&a, &b, &c, &n};
  return cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr);
}

// vec_add on 1000 elements, checked on the host.
int work(CUfunction f) {
  const int n = 1000;
  std::vector<float> a(n), b(n), c(n, 0.f);
  for (int i = 0; i < n; ++i) a[i] = 0.5f * i, b[i] = 3.f - i;
  CUdeviceptr da, db, dc;
  CUresult r;
  if ((r = cuMemAlloc(&da, n * 4)) || (r = cuMemAlloc(&db, n * 4)) || (r = cuMemAlloc(&dc, n * 4))) {
    return fail("alloc", r);
  }
  if ((r = cuMemcpyHtoD(da, a.data(), n * 4)) || (r = cuMemcpyHtoD(db, b.data(), n * 4)) ||
      (r = vec_add(f, da, db, dc, n)) || (r = cuMemcpyDtoH(c.data(), dc, n * 4))) {
    std::printf("work=%s\n", err_name(r));
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    if (c[i] != a[i] + b[i]) {
      std::printf("work=mismatch at %d\n", i);
      return 1;
    }
  }
  std::printf("work=ok\n");
  return 0;
}

int oob(CUfunction f) {
  const int n = 256;
  CUdeviceptr a, c;
  CUresult r;
  if ((r = cuMemAlloc(&a, n * 4)) || (r = cuMemAlloc(&c, n * 4))) return fail("alloc", r);
  // The output far past the end of its allocation.
  r = vec_add(f, a, a, c + (CUdeviceptr{1} << 40), n);
  std::printf("launch=%s\n", err_name(r));
  std::printf("sync=%s\n", err_name(cuCtxSynchronize()));
  std::printf("sync_again=%s\n", err_name(cuCtxSynchronize()));
  std::vector<float> host(n, 1.f);
  std::printf("copy=%s\n", err_name(cuMemcpyHtoD(a, host.data(), n * 4)));
  CUdeviceptr more = 0;
  std::printf("alloc=%s\n", err_name(cuMemAlloc(&more, 4096)));
  r = vec_add(f, a, a, c, n);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  std::printf("relaunch=%s\n", err_name(r));
  std::printf("ready\n");
  // Hold the faulted context while the test runs other clients.
  pollfd p{0, POLLIN, 0};
  poll(&p, 1, 30000);
  return 0;
}

int failed_assert() {
  std::string image = read_image("assert_trap.fatbin");
  CUmodule m;
  CUfunction f;
  CUresult r;
  if ((r = cuModuleLoadData(&m, image.data())) || (r = cuModuleGetFunction(&f, m, "assert_positive"))) {
    return fail("load", r);
  }
  const int n = 64;
  std::vector<int> in(n, 5);
  CUdeviceptr d;
  if ((r = cuMemAlloc(&d, n * 4)) || (r = cuMemcpyHtoD(d, in.data(), n * 4))) return fail("copy", r);
  int count = n;
  void* params[] = {&d, &count};
  r = cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  std::printf("positive=%s\n", err_name(r));
  in[17] = -1;
  if ((r = cuMemcpyHtoD(d, in.data(), n * 4))) return fail("copy", r);
  r = cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);
  std::printf("launch=%s\n", err_name(r));
  std::printf("sync=%s\n", err_name(cuCtxSynchronize()));
  std::printf("sync_again=%s\n", err_name(cuCtxSynchronize()));
  return 0;
}

int spin() {
  std::string image = read_image("assert_trap.fatbin");
  CUmodule m;
  CUfunction f;
  CUresult r;
  if ((r = cuModuleLoadData(&m, image.data())) || (r = cuModuleGetFunction(&f, m, "spin_forever"))) {
    return fail("load", r);
  }
  CUdeviceptr flag;
  if ((r = cuMemAlloc(&flag, 4)) || (r = cuMemsetD32(flag, 0, 1))) return fail("alloc", r);
  void* params[] = {&flag};
  auto t0 = std::chrono::steady_clock::now();
  r = cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr);
  std::printf("launch=%s\n", err_name(r));
  r = cuCtxSynchronize();
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  std::printf("sync=%s after_ms=%lld\n", err_name(r), ms);
  std::printf("sync_again=%s\n", err_name(cuCtxSynchronize()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string mode = argc > 1 ? argv[1] : "";
  CUresult r;
  CUcontext ctx;
  if ((r = cuInit(0)) != CUDA_SUCCESS) return fail("cuInit", r);
  if ((r = cuDevicePrimaryCtxRetain(&ctx, 0)) || (r = cuCtxSetCurrent(ctx))) return fail("context", r);
  if (mode == "assert") return failed_assert();
  if (mode == "spin") return spin();
  std::string image = read_image("elementwise.fatbin");
  CUmodule m;
  CUfunction f;
  if ((r = cuModuleLoadData(&m, image.data())) || (r = cuModuleGetFunction(&f, m, "vec_add"))) {
    return fail("load", r);
  }
  if (mode == "work") return work(f);
  if (mode == "oob") return oob(f);
  std::fprintf(stderr, "usage: kernels_e2e_client work|oob|assert|spin\n");
  return 2;
}
