// A program that loads one module and runs its kernel once: the subject of the
// module cache tests (tests/e2e/module_cache_test.cpp).
#include <cuda.h>

#include <cstdio>

namespace {

const char kPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry store_seven(.param .u64 out) {
  .reg .u64 %rd<2>;
  .reg .u32 %r<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

}  // namespace

int main() {
  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction fn;
  CUdeviceptr out;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "no device\n");
    return 1;
  }
  if (cuModuleLoadData(&module, kPtx) != CUDA_SUCCESS || cuModuleGetFunction(&fn, module, "store_seven") != CUDA_SUCCESS ||
      cuMemAlloc(&out, 4) != CUDA_SUCCESS) {
    std::fprintf(stderr, "module load failed\n");
    return 1;
  }
  void* params[] = {&out};
  unsigned value = 0;
  if (cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS ||
      cuMemcpyDtoH(&value, out, 4) != CUDA_SUCCESS || value != 7) {
    std::fprintf(stderr, "kernel failed (value %u)\n", value);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
