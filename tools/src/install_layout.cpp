#include "install_layout.h"

#include <algorithm>

namespace fs = std::filesystem;

namespace rgpu::tools {

fs::path self_dir() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path();
}

fs::path find_client_library() {
  fs::path dir = self_dir();
  for (const fs::path& p : {dir / "../lib/librgpu.so", dir / "librgpu.so", dir / "../lib/rgpu/librgpu.so"}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec);
  }
  return {};
}

std::vector<std::string> rgpu_sonames(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("lib", 0) == 0 && name.find(".so.") != std::string::npos && entry.is_symlink(ec)) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rgpu::tools
