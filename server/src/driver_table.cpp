// Loading the driver table with dlopen/dlsym.
#include "rgpu/server/driver_table.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "nvml_utilization.h"
#include "rgpu/common/log.h"

namespace rgpu::server {

Result<std::shared_ptr<const DriverTable>> DriverTable::load(const std::string& path) {
  void* raw = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!raw) {
    const char* why = dlerror();
    return failed("cannot load driver library " + path + ": " + (why ? why : "unknown error"));
  }
  auto table = std::make_shared<DriverTable>();
  table->handle = std::shared_ptr<void>(raw, [](void* h) { dlclose(h); });
  table->path = path;
  std::string missing;
#define RGPU_DRIVER_RESOLVE(fn)                                                        \
  table->fn = reinterpret_cast<decltype(table->fn)>(dlsym(raw, RGPU_DRIVER_STR(fn)));  \
  if (!table->fn) missing += std::string(missing.empty() ? "" : ", ") + RGPU_DRIVER_STR(fn);
  RGPU_DRIVER_REQUIRED(RGPU_DRIVER_RESOLVE)
#undef RGPU_DRIVER_RESOLVE
#define RGPU_DRIVER_RESOLVE_OPTIONAL(fn) \
  table->fn = reinterpret_cast<decltype(table->fn)>(dlsym(raw, RGPU_DRIVER_STR(fn)));
  RGPU_DRIVER_OPTIONAL(RGPU_DRIVER_RESOLVE_OPTIONAL)
  RGPU_DRIVER_EXTENSIONS(RGPU_DRIVER_RESOLVE_OPTIONAL)
#undef RGPU_DRIVER_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    return failed("driver library " + path + " lacks required functions: " + missing);
  }
  // NVIDIA's driver does not measure utilization: its NVML does, when it is here.
  if (!table->rgpuDeviceGetUtilization) table->rgpuDeviceGetUtilization = nvml_utilization(table->cuDeviceGetUuid);
  return std::shared_ptr<const DriverTable>(std::move(table));
}

std::string find_cpu_device_library() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / "librgpu-cpudev.so", dir / "../lib/librgpu-cpudev.so",
                                    dir / "../lib/rgpu/librgpu-cpudev.so"}) {
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return "";
}

}  // namespace rgpu::server
