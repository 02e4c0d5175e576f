// MIG discovery through NVML (dlopen, no link dependency), MPS and green
// context detection. None of it runs on a host without NVIDIA's driver.
#include "mig.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

namespace rgpu::server {
namespace {

// NVML's ABI as libnvidia-ml.so.1 exports it (nvml.h; no header here).
using NvmlReturn = int;  // 0: NVML_SUCCESS
struct NvmlDevice;
constexpr unsigned kMigEnabled = 1;  // NVML_DEVICE_MIG_ENABLE

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice**) = nullptr;
  NvmlReturn (*mig_mode)(NvmlDevice*, unsigned*, unsigned*) = nullptr;
  NvmlReturn (*max_mig)(NvmlDevice*, unsigned*) = nullptr;
  NvmlReturn (*mig_by_index)(NvmlDevice*, unsigned, NvmlDevice**) = nullptr;
  NvmlReturn (*uuid)(NvmlDevice*, char*, unsigned) = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
};

template <class F>
bool bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

std::string uuid_of(const Nvml& n, NvmlDevice* d) {
  char text[96] = {};
  return n.uuid(d, text, sizeof text) == 0 ? std::string(text) : std::string();
}

}  // namespace

MigLayout discover_mig() {
  MigLayout layout;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return layout;
  Nvml n;
  const bool bound = bind(lib, "nvmlInit_v2", &n.init) && bind(lib, "nvmlDeviceGetCount_v2", &n.count) &&
                     bind(lib, "nvmlDeviceGetHandleByIndex_v2", &n.by_index) &&
                     bind(lib, "nvmlDeviceGetMigMode", &n.mig_mode) &&
                     bind(lib, "nvmlDeviceGetMaxMigDeviceCount", &n.max_mig) &&
                     bind(lib, "nvmlDeviceGetMigDeviceHandleByIndex", &n.mig_by_index) &&
                     bind(lib, "nvmlDeviceGetUUID", &n.uuid) && bind(lib, "nvmlShutdown", &n.shutdown);
  unsigned count = 0;
  if (!bound || n.init() != 0) {
    dlclose(lib);
    return layout;
  }
  if (n.count(&count) == 0) {
    for (unsigned i = 0; i < count; ++i) {
      NvmlDevice* gpu = nullptr;
      if (n.by_index(i, &gpu) != 0) continue;
      unsigned current = 0, pending = 0, most = 0;
      if (n.mig_mode(gpu, &current, &pending) == 0 && current == kMigEnabled && n.max_mig(gpu, &most) == 0) {
        for (unsigned m = 0; m < most; ++m) {
          NvmlDevice* instance = nullptr;
          if (n.mig_by_index(gpu, m, &instance) != 0) continue;  // an empty slot
          if (std::string id = uuid_of(n, instance); !id.empty()) {
            layout.devices.push_back(id);
            ++layout.instances;
          }
        }
      } else if (std::string id = uuid_of(n, gpu); !id.empty()) {
        layout.devices.push_back(id);
      }
    }
  }
  n.shutdown();
  dlclose(lib);
  if (layout.instances == 0) layout.devices.clear();
  return layout;
}

bool mps_daemon_running() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string pipe = std::string(dir && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st {};
  return stat(pipe.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

bool driver_has_green_contexts(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  const bool has = dlsym(lib, "cuGreenCtxCreate") != nullptr;
  dlclose(lib);
  return has;
}

}  // namespace rgpu::server
