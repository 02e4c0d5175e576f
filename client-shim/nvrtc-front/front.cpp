// The NVRTC front: NVRTC's soname and API, forwarded to NVIDIA's library,
// with one change: the cubin a program asks for comes back as a fatbin that
// holds the cubin and the PTX it was compiled from.
//
// Why: programs compile for the current device's real architecture and load
// the cubin (PyTorch's jiterator loads NVRTC with dlopen and dlsym, so only a
// library under NVRTC's soname, preloaded by `rgpu run`, is reached). A GPU
// driver, rgpu's client included, loads a fatbin wherever a cubin is
// accepted and picks the cubin; rgpu's CPU device, which runs PTX only,
// picks the PTX. Compiling for sm_XX leaves the PTX available, so nothing is
// compiled twice. Everything else is forwarded unchanged (generated:
// client-shim/generated/nvrtc_front.cpp).
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "find_real.h"
#include "rgpu/fatbin/fatbin.h"

extern "C" void* rgpu_front_real(const char* name);

namespace {

// Guards the per-program state below. NVIDIA's library is found once, under
// its own once_flag: a call that holds g_mutex may still look a function up.
std::mutex g_mutex;
std::once_flag g_real_once;
void* g_real = nullptr;

// The architecture (80 for sm_80) a program is compiled for, when real.
std::map<nvrtcProgram, unsigned> g_arch;
// The fatbin made for a program, kept from the size query to the copy.
std::map<nvrtcProgram, std::vector<std::uint8_t>> g_fatbins;

void* real_library() {
  std::call_once(g_real_once, [] {
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&real_library), &self);
    std::string path = rgpu::nvrtc_front::find_real_library(RGPU_FRONT_SONAME, self.dli_fname ? self.dli_fname : "");
    if (!path.empty()) g_real = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!g_real) {
      std::fprintf(stderr, "[rgpu] nvrtc front: NVIDIA's %s was not found (set RGPU_NVRTC_LIBRARY)\n",
                   RGPU_FRONT_SONAME);
    }
  });
  return g_real;
}

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(rgpu_front_real(name));
}

// 80 from "--gpu-architecture=sm_80", "-arch=sm_80" or "sm_80" after the
// flag; 0 when the target is virtual (compute_XX) or not given.
unsigned real_arch(int n, const char* const* options) {
  unsigned arch = 0;
  for (int i = 0; i < n && options; ++i) {
    const char* o = options[i];
    if (!o) continue;
    const char* value = nullptr;
    for (const char* flag : {"--gpu-architecture=", "-arch=", "--gpu-architecture", "-arch"}) {
      size_t len = std::strlen(flag);
      if (std::strncmp(o, flag, len) != 0) continue;
      if (o[len] == '\0' && i + 1 < n) value = options[i + 1];
      else if (flag[len - 1] == '=') value = o + len;
      break;
    }
    if (!value) continue;
    arch = std::strncmp(value, "sm_", 3) == 0 ? static_cast<unsigned>(std::strtoul(value + 3, nullptr, 10)) : 0;
  }
  return arch;
}

// The PTX text's ".version X.Y".
void ptx_version(const std::string& ptx, std::uint16_t* major, std::uint16_t* minor) {
  size_t at = ptx.find(".version ");
  if (at == std::string::npos) return;
  char* end = nullptr;
  *major = static_cast<std::uint16_t>(std::strtoul(ptx.c_str() + at + 9, &end, 10));
  if (end && *end == '.') *minor = static_cast<std::uint16_t>(std::strtoul(end + 1, nullptr, 10));
}

// The fatbin {cubin, PTX} of a program compiled for a real architecture.
nvrtcResult make_fatbin(nvrtcProgram prog, unsigned arch, std::vector<std::uint8_t>* out) {
  auto cubin_size = real<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetCUBINSize");
  auto cubin = real<nvrtcResult (*)(nvrtcProgram, char*)>("nvrtcGetCUBIN");
  auto ptx_size = real<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetPTXSize");
  auto ptx = real<nvrtcResult (*)(nvrtcProgram, char*)>("nvrtcGetPTX");
  if (!cubin_size || !cubin || !ptx_size || !ptx) return NVRTC_ERROR_INTERNAL_ERROR;
  size_t n = 0;
  if (nvrtcResult r = cubin_size(prog, &n); r != NVRTC_SUCCESS) return r;
  std::vector<char> elf(n);
  if (nvrtcResult r = cubin(prog, elf.data()); r != NVRTC_SUCCESS) return r;
  if (ptx_size(prog, &n) != NVRTC_SUCCESS) return NVRTC_ERROR_INTERNAL_ERROR;
  std::string text(n, '\0');
  if (ptx(prog, text.data()) != NVRTC_SUCCESS) return NVRTC_ERROR_INTERNAL_ERROR;
  text.resize(std::strlen(text.c_str()));
  rgpu::fatbin::NewEntry entries[2];
  entries[0].kind = rgpu::fatbin::EntryKind::kCubin;
  entries[0].arch = arch;
  entries[0].payload = rgpu::fatbin::Bytes(reinterpret_cast<const std::uint8_t*>(elf.data()), elf.size());
  entries[1].kind = rgpu::fatbin::EntryKind::kPtx;
  entries[1].arch = arch;
  ptx_version(text, &entries[1].version_major, &entries[1].version_minor);
  entries[1].payload = rgpu::fatbin::Bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  auto built = rgpu::fatbin::build_fatbin(entries);
  if (!built.is_ok()) return NVRTC_ERROR_INTERNAL_ERROR;
  *out = std::move(built.value());
  return NVRTC_SUCCESS;
}

}  // namespace

extern "C" {

// Used by the generated forwarders.
void* rgpu_front_real(const char* name) {
  void* lib = real_library();
  if (!lib) return nullptr;
  void* fn = dlvsym(lib, name, RGPU_FRONT_NODE);
  return fn ? fn : dlsym(lib, name);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
                                                                      const char* const* options) {
  auto compile = real<nvrtcResult (*)(nvrtcProgram, int, const char* const*)>("nvrtcCompileProgram");
  if (!compile) return NVRTC_ERROR_INTERNAL_ERROR;
  nvrtcResult r = compile(prog, numOptions, options);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fatbins.erase(prog);
  if (unsigned arch = r == NVRTC_SUCCESS ? real_arch(numOptions, options) : 0; arch != 0) {
    g_arch[prog] = arch;
  } else {
    g_arch.erase(prog);
  }
  return r;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet) {
  unsigned arch = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto it = g_fatbins.find(prog); it != g_fatbins.end() && cubinSizeRet) {
      *cubinSizeRet = it->second.size();
      return NVRTC_SUCCESS;
    }
    if (auto it = g_arch.find(prog); it != g_arch.end()) arch = it->second;
  }
  if (arch == 0 || !cubinSizeRet) {
    auto fn = real<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetCUBINSize");
    return fn ? fn(prog, cubinSizeRet) : NVRTC_ERROR_INTERNAL_ERROR;
  }
  std::vector<std::uint8_t> fatbin;
  if (nvrtcResult r = make_fatbin(prog, arch, &fatbin); r != NVRTC_SUCCESS) return r;
  *cubinSizeRet = fatbin.size();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fatbins[prog] = std::move(fatbin);
  return NVRTC_SUCCESS;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  size_t n = 0;
  if (nvrtcResult r = nvrtcGetCUBINSize(prog, &n); r != NVRTC_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_fatbins.find(prog);
  if (it == g_fatbins.end()) {
    auto fn = real<nvrtcResult (*)(nvrtcProgram, char*)>("nvrtcGetCUBIN");
    return fn ? fn(prog, cubin) : NVRTC_ERROR_INTERNAL_ERROR;
  }
  if (!cubin) return NVRTC_ERROR_INVALID_INPUT;
  std::memcpy(cubin, it->second.data(), it->second.size());
  return NVRTC_SUCCESS;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (prog) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_arch.erase(*prog);
    g_fatbins.erase(*prog);
  }
  auto fn = real<nvrtcResult (*)(nvrtcProgram*)>("nvrtcDestroyProgram");
  return fn ? fn(prog) : NVRTC_ERROR_INTERNAL_ERROR;
}

}  // extern "C"
