// Copies 1 MiB made of a 16-byte marker to the device and back through rgpu,
// and says what came back (tamper_test.py):
//   "same" (exit 0), "changed N bytes" (exit 3), or "error=<name> at <step>"
//   (exit 4) when a call failed.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failed(const char* step, CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  std::printf("error=%s at %s\n", name, step);
  return 4;
}

}  // namespace

int main() {
  constexpr size_t kBytes = size_t{1} << 20;
  constexpr char kMarker[] = "RGPU-TAMPER-ME!!";
  std::vector<char> up(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; i += 16) std::memcpy(up.data() + i, kMarker, 16);
  CUresult r;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr d;
  if ((r = cuInit(0)) != CUDA_SUCCESS) return failed("cuInit", r);
  if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) return failed("cuDeviceGet", r);
  if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) return failed("cuDevicePrimaryCtxRetain", r);
  if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) return failed("cuCtxSetCurrent", r);
  if ((r = cuMemAlloc(&d, kBytes)) != CUDA_SUCCESS) return failed("cuMemAlloc", r);
  if ((r = cuMemcpyHtoD(d, up.data(), kBytes)) != CUDA_SUCCESS) return failed("cuMemcpyHtoD", r);
  if ((r = cuMemcpyDtoH(back.data(), d, kBytes)) != CUDA_SUCCESS) return failed("cuMemcpyDtoH", r);
  size_t changed = 0;
  for (size_t i = 0; i < kBytes; ++i) changed += up[i] != back[i];
  if (changed != 0) {
    std::printf("changed %zu bytes\n", changed);
    return 3;
  }
  std::printf("same\n");
  return 0;
}
