// Where NVIDIA's NVRTC is on this host, for the NVRTC front (which forwards
// to it) and for `rgpu run` (which preloads the front only when there is a
// library to forward to). Header-only: the two share no other code.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace rgpu::nvrtc_front {

// The first file named `soname` in RGPU_NVRTC_LIBRARY (a file), the
// LD_LIBRARY_PATH folders, then the usual library folders and CUDA's, that is
// not `self` (the front's own file); empty if none.
inline std::string find_real_library(const std::string& soname, const std::string& self = "") {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path own = self.empty() ? fs::path() : fs::weakly_canonical(self, ec);
  auto usable = [&](const fs::path& p) {
    if (!fs::is_regular_file(p, ec)) return false;
    return own.empty() || fs::weakly_canonical(p, ec) != own;
  };
  if (const char* explicit_path = std::getenv("RGPU_NVRTC_LIBRARY"); explicit_path && *explicit_path) {
    return usable(explicit_path) ? std::string(explicit_path) : std::string();
  }
  std::vector<std::string> folders;
  if (const char* path = std::getenv("LD_LIBRARY_PATH"); path && *path) {
    std::string all = path;
    for (size_t start = 0; start <= all.size();) {
      size_t end = all.find(':', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) folders.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const char* f : {"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                        "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}) {
    folders.emplace_back(f);
  }
  for (const std::string& folder : folders) {
    fs::path candidate = fs::path(folder) / soname;
    if (usable(candidate)) return candidate.string();
  }
  return {};
}

}  // namespace rgpu::nvrtc_front
