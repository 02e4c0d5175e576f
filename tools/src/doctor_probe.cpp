// rgpu-doctor-probe: what a program started here would get, for `rgpu
// doctor` (doctor.cpp), which starts it the way `rgpu run` starts programs.
// Prints where each library rgpu answers to resolves and, with --device,
// what the CUDA driver API gives: cuInit's result, the devices, the round
// trip of a small synchronous copy. A program of its own (not a mode of `rgpu`): `rgpu
// run` refuses programs that carry the static CUDA runtime, and `rgpu`
// holds the strings that detection looks for.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "install_layout.h"

namespace fs = std::filesystem;

namespace rgpu::tools {
namespace {

// Sync calls timed for the round trip (doctor.cpp prints the count).
constexpr int kRoundTrips = 200;

// Libraries a CUDA program may load beside the ones rgpu answers to.
const char* const kAlsoChecked[] = {"libnvrtc.so.12", "libnvrtc.so.13"};

// Where the dynamic loader finds `name` in this process ("-" when nowhere).
std::string resolve(const char* name) {
  void* h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "-";
  link_map* map = nullptr;
  std::string path = "-";
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(map->l_name, ec);
    path = ec ? map->l_name : real.string();
  }
  return path;
}

std::vector<std::string> checked_libraries() {
  const fs::path library = find_client_library();
  std::vector<std::string> names = rgpu_sonames(library.parent_path() / "rgpu");
  for (const char* n : kAlsoChecked) names.emplace_back(n);
  return names;
}

const char* error_name(CUresult r) {
  const char* name = nullptr;
  auto get = reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(RTLD_DEFAULT, "cuGetErrorName"));
  if (get == nullptr || get(r, &name) != CUDA_SUCCESS || name == nullptr) return "CUDA_ERROR_UNKNOWN";
  return name;
}

// Lines on stdout, tab-separated: "lib NAME PATH", then with `device`:
// "init CODE", "device I NAME BYTES MAJOR MINOR", "rtt_us P50 P99".
int probe(bool device) {
  for (const std::string& name : checked_libraries()) std::printf("lib\t%s\t%s\n", name.c_str(), resolve(name.c_str()).c_str());
  std::fflush(stdout);
  if (!device) return 0;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == nullptr) {
    std::printf("init\tno libcuda.so.1\n");
    return 0;
  }
#define RGPU_SYM(name) auto p_##name = reinterpret_cast<decltype(&name)>(dlsym(cuda, #name))
  RGPU_SYM(cuInit);
  RGPU_SYM(cuDeviceGetCount);
  RGPU_SYM(cuDeviceGet);
  RGPU_SYM(cuDeviceGetName);
  RGPU_SYM(cuDeviceTotalMem_v2);
  RGPU_SYM(cuDeviceGetAttribute);
  RGPU_SYM(cuDevicePrimaryCtxRetain);
  RGPU_SYM(cuDevicePrimaryCtxRelease_v2);
  RGPU_SYM(cuCtxSetCurrent);
  RGPU_SYM(cuMemAlloc_v2);
  RGPU_SYM(cuMemFree_v2);
  RGPU_SYM(cuMemcpyDtoH_v2);
#undef RGPU_SYM
  if (!p_cuInit || !p_cuDeviceGetCount || !p_cuDeviceGet || !p_cuDeviceGetName || !p_cuDeviceTotalMem_v2 ||
      !p_cuDeviceGetAttribute || !p_cuDevicePrimaryCtxRetain || !p_cuDevicePrimaryCtxRelease_v2 ||
      !p_cuCtxSetCurrent || !p_cuMemAlloc_v2 || !p_cuMemFree_v2 || !p_cuMemcpyDtoH_v2) {
    std::printf("init\tlibcuda.so.1 lacks the driver API\n");
    return 0;
  }
  CUresult r = p_cuInit(0);
  std::printf("init\t%s\n", r == CUDA_SUCCESS ? "ok" : error_name(r));
  std::fflush(stdout);
  if (r != CUDA_SUCCESS) return 0;
  int count = 0;
  p_cuDeviceGetCount(&count);
  for (int i = 0; i < count; ++i) {
    CUdevice d = 0;
    char name[256] = {};
    size_t bytes = 0;
    int major = 0;
    int minor = 0;
    p_cuDeviceGet(&d, i);
    p_cuDeviceGetName(name, sizeof name, d);
    p_cuDeviceTotalMem_v2(&bytes, d);
    p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    for (char& c : name) {
      if (c == '\t' || c == '\n') c = ' ';
    }
    std::printf("device\t%d\t%s\t%zu\t%d\t%d\n", i, name, bytes, major, minor);
  }
  std::fflush(stdout);
  if (count == 0) return 0;
  CUdevice d0 = 0;
  CUcontext ctx = nullptr;
  p_cuDeviceGet(&d0, 0);
  if (p_cuDevicePrimaryCtxRetain(&ctx, d0) != CUDA_SUCCESS || p_cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 0;
  // A 4-byte device-to-host copy: always answered by the server (a
  // synchronize with nothing queued may be answered by the client alone).
  CUdeviceptr word = 0;
  if (p_cuMemAlloc_v2(&word, 4) == CUDA_SUCCESS) {
    std::vector<double> us;
    uint32_t host = 0;
    for (int i = 0; i < kRoundTrips; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (p_cuMemcpyDtoH_v2(&host, word, sizeof host) != CUDA_SUCCESS) break;
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!us.empty()) {
      std::sort(us.begin(), us.end());
      std::printf("rtt_us\t%.1f\t%.1f\n", us[us.size() / 2], us[us.size() * 99 / 100]);
    }
    p_cuMemFree_v2(word);
  }
  p_cuDevicePrimaryCtxRelease_v2(d0);
  return 0;
}

}  // namespace
}  // namespace rgpu::tools

int main(int argc, char** argv) {
  const bool device = argc > 1 && std::strcmp(argv[1], "--device") == 0;
  return rgpu::tools::probe(device);
}
