// Run-time compiled code on any device, the way PyTorch's jiterator does it:
// NVRTC loaded with dlopen and dlsym, a kernel compiled for the device's real
// architecture (sm_XX), its "cubin" loaded with cuModuleLoadData and
// launched. Under `rgpu run` the NVRTC front answers the dlopen and hands back
// a fatbin of the cubin and its PTX, so the CPU device (PTX only) runs it.
// Prints "PASS nvrtc_jit" or "FAIL nvrtc_jit: why".
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const std::string& why) {
  std::printf("FAIL nvrtc_jit: %s\n", why.c_str());
  return 1;
}

constexpr char kSource[] =
    "extern \"C\" __global__ void scale(float* x, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = x[i] * a + 1.0f;\n"
    "}\n";

}  // namespace

int main() {
  void* nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!nvrtc) return fail(std::string("dlopen libnvrtc.so.13: ") + dlerror());
  auto create = reinterpret_cast<decltype(&nvrtcCreateProgram)>(dlsym(nvrtc, "nvrtcCreateProgram"));
  auto compile = reinterpret_cast<decltype(&nvrtcCompileProgram)>(dlsym(nvrtc, "nvrtcCompileProgram"));
  auto cubin_size = reinterpret_cast<decltype(&nvrtcGetCUBINSize)>(dlsym(nvrtc, "nvrtcGetCUBINSize"));
  auto get_cubin = reinterpret_cast<decltype(&nvrtcGetCUBIN)>(dlsym(nvrtc, "nvrtcGetCUBIN"));
  auto destroy = reinterpret_cast<decltype(&nvrtcDestroyProgram)>(dlsym(nvrtc, "nvrtcDestroyProgram"));
  auto version = reinterpret_cast<decltype(&nvrtcVersion)>(dlsym(nvrtc, "nvrtcVersion"));
  if (!create || !compile || !cubin_size || !get_cubin || !destroy || !version) return fail("dlsym");
  int major = 0, minor = 0;
  if (version(&major, &minor) != NVRTC_SUCCESS || major < 12) return fail("nvrtcVersion (forwarded)");

  if (cuInit(0) != CUDA_SUCCESS) return fail("cuInit");
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    return fail("context");
  }
  int cc_major = 0, cc_minor = 0;
  cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  // As PyTorch does: the device's real architecture, asking for SASS.
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(cc_major * 10 + cc_minor);

  nvrtcProgram prog = nullptr;
  if (create(&prog, kSource, "scale.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return fail("create");
  const char* options[] = {arch.c_str(), "--std=c++17"};
  if (compile(prog, 2, options) != NVRTC_SUCCESS) return fail("compile " + arch);
  size_t n = 0;
  if (cubin_size(prog, &n) != NVRTC_SUCCESS || n < 16) return fail("cubin size");
  std::vector<char> image(n);
  if (get_cubin(prog, image.data()) != NVRTC_SUCCESS) return fail("cubin");
  destroy(&prog);
  std::uint32_t magic = 0;
  std::memcpy(&magic, image.data(), sizeof magic);
  if (magic != 0xBA55ED50u) return fail("the front did not wrap the cubin in a fatbin");

  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  if (CUresult r = cuModuleLoadData(&module, image.data()); r != CUDA_SUCCESS) {
    return fail("cuModuleLoadData " + std::to_string(r));
  }
  if (cuModuleGetFunction(&fn, module, "scale") != CUDA_SUCCESS) return fail("cuModuleGetFunction");
  constexpr int kN = 1000;
  std::vector<float> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = static_cast<float>(i);
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, kN * sizeof(float)) != CUDA_SUCCESS) return fail("alloc");
  cuMemcpyHtoD(d, host.data(), kN * sizeof(float));
  float a = 2.0f;
  int count = kN;
  void* args[] = {&d, &a, &count};
  if (cuLaunchKernel(fn, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS) {
    return fail("launch");
  }
  if (cuMemcpyDtoH(host.data(), d, kN * sizeof(float)) != CUDA_SUCCESS) return fail("copy back");
  for (int i = 0; i < kN; ++i) {
    if (host[i] != static_cast<float>(i) * 2.0f + 1.0f) return fail("wrong value at " + std::to_string(i));
  }
  cuMemFree(d);
  cuModuleUnload(module);
  std::printf("PASS nvrtc_jit (%s, nvrtc %d.%d)\n", arch.c_str(), major, minor);
  return 0;
}
