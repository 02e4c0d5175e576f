#include "client_env.h"

#include "find_real.h"
#include "install_layout.h"

namespace fs = std::filesystem;

namespace rgpu::tools {

ClientEnvironment client_environment(const fs::path& library) {
  ClientEnvironment env;
  env.preload = library.string();
  // Every soname rgpu answers to, by bare name: each is found in lib/rgpu/
  // (the library path) as a link to the library already preloaded, so the
  // loader only adds the name. A program that finds NVIDIA's libraries
  // through its own RPATH (pip's PyTorch and the nvidia-* wheels) then binds
  // to rgpu's, which are loaded first, and never maps NVIDIA's.
  for (const std::string& name : rgpu_sonames(library.parent_path() / "rgpu")) env.preload += ":" + name;
  // The NVRTC fronts (docs/pytorch.md): preloaded where NVIDIA's NVRTC is
  // installed, so that run-time compiled code loads on any device.
  for (const char* soname : {"libnvrtc.so.12", "libnvrtc.so.13"}) {
    fs::path front = library.parent_path() / "rgpu-nvrtc" / soname;
    if (fs::exists(front) && !rgpu::nvrtc_front::find_real_library(soname, front.string()).empty()) {
      env.preload += ":" + front.string();
    }
  }
  env.library_path = (library.parent_path() / "rgpu").string();
  return env;
}

std::string path_before(const std::string& value, const char* old) {
  if (old == nullptr || *old == '\0') return value;
  return value + ":" + old;
}

}  // namespace rgpu::tools
