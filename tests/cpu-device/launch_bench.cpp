// Kernel launch throughput of one or more builds of the CPU device, measured
// side by side in one process: each round times the same memory-bound kernel
// (vec_add: two global loads and a store per thread, so the memory checker
// runs on every warp's access) on each library in turn.
//
// Usage: rgpu_cpudev_launch_bench [--rounds N] [--launches N] LIBRARY...
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Lib {
  std::string path;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuCtxCreate) ctx_create = nullptr;
  decltype(&::cuModuleLoadData) load = nullptr;
  decltype(&::cuModuleGetFunction) get_function = nullptr;
  decltype(&::cuMemAlloc) alloc = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuCtxSynchronize) sync = nullptr;
  CUfunction fn = nullptr;
  CUdeviceptr a = 0, b = 0, c = 0;
  std::vector<double> seconds, cpu_seconds;
};

// CPU seconds of the whole process: on a loaded machine the CPU time a
// kernel takes varies less than its wall time.
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
bool sym(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  return *out != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, launches = 20;
  std::vector<Lib> libs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) launches = std::atoi(argv[++i]);
    else {
      libs.emplace_back();
      libs.back().path = argv[i];
    }
  }
  if (libs.empty()) {
    std::fprintf(stderr, "usage: %s [--rounds N] [--launches N] LIBRARY...\n", argv[0]);
    return 2;
  }
  std::ifstream in(RGPU_CPUDEV_TEST_FATBIN, std::ios::binary);
  std::vector<char> fatbin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const int n = 1 << 18;
  for (Lib& l : libs) {
    void* h = dlopen(l.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h || !sym(h, "cuInit", &l.init) || !sym(h, "cuCtxCreate_v4", &l.ctx_create) ||
        !sym(h, "cuModuleLoadData", &l.load) || !sym(h, "cuModuleGetFunction", &l.get_function) ||
        !sym(h, "cuMemAlloc_v2", &l.alloc) || !sym(h, "cuLaunchKernel", &l.launch) ||
        !sym(h, "cuCtxSynchronize", &l.sync)) {
      std::fprintf(stderr, "%s: cannot load: %s\n", l.path.c_str(), dlerror());
      return 1;
    }
    CUcontext ctx;
    CUmodule mod;
    if (l.init(0) || l.ctx_create(&ctx, nullptr, 0, 0) || l.load(&mod, fatbin.data()) ||
        l.get_function(&l.fn, mod, "vec_add") || l.alloc(&l.a, n * 4) || l.alloc(&l.b, n * 4) ||
        l.alloc(&l.c, n * 4)) {
      std::fprintf(stderr, "%s: setup failed\n", l.path.c_str());
      return 1;
    }
  }
  // Each library's calls go to its own driver, which keeps its own current
  // context per thread; all run on this thread, one after the other.
  for (int r = 0; r < rounds; ++r) {
    for (Lib& l : libs) {
      int count = n;
      void* args[] = {&l.a, &l.b, &l.c, &count};
      auto t0 = std::chrono::steady_clock::now();
      double c0 = cpu_now();
      for (int k = 0; k < launches; ++k) {
        if (l.launch(l.fn, n / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr)) return 1;
      }
      if (l.sync()) return 1;
      l.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      l.cpu_seconds.push_back(cpu_now() - c0);
    }
  }
  double base = 0, cpu_base = 0;
  for (Lib& l : libs) {
    double wall = median(l.seconds), cpu = median(l.cpu_seconds);
    if (base == 0) base = wall;
    if (cpu_base == 0) cpu_base = cpu;
    std::printf("%-48s %d launches: median wall %.4f s (ratio %.3f), cpu %.4f s (ratio %.3f)\n", l.path.c_str(),
                launches, wall, wall / base, cpu, cpu / cpu_base);
  }
  return 0;
}
