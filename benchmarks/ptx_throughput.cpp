// PTX interpreter throughput: thread-instructions per second on corpus
// kernels (element-wise, tiled matmul, shuffle reduction, math functions,
// divergent control flow), with 1 worker and with all cores, interpreted and
// compiled (LaunchEnv::jit) side by side.
//
// Usage: rgpu_ptx_throughput [--ptx-dir DIR] [--arch sm_75] [--seconds S] [--quick]
//                            [--kernel NAME] [--path interpreted|compiled]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/ptx/ptx.h"

namespace {

using rgpu::ptx::Dim3;
using rgpu::ptx::KernelInfo;
using rgpu::ptx::LaunchEnv;
using rgpu::ptx::LaunchResult;
using rgpu::ptx::Program;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Params {
 public:
  explicit Params(const KernelInfo& k) : k_(k), buf_(k.param_bytes) {}
  template <class T>
  Params& add(const T& v) {
    if (i_ < k_.params.size()) memcpy(buf_.data() + k_.params[i_++].offset, &v, sizeof(T));
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return buf_; }

 private:
  const KernelInfo& k_;
  std::vector<uint8_t> buf_;
  size_t i_ = 0;
};

template <class T>
uint64_t addr(std::vector<T>& v) {
  return reinterpret_cast<uint64_t>(v.data());
}

// CPU seconds used by the whole process: a rate per CPU second stays
// meaningful on a loaded machine.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

struct Case {
  const char* file;
  const char* kernel;
  Dim3 grid, block;
  uint32_t shared = 0;
  // Fills the parameter buffer; buffers live in the Case's storage.
  std::function<std::vector<uint8_t>(const KernelInfo&)> params;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = RGPU_PTX_DIR, arch = "sm_75";
  double seconds = 1.0;
  std::string only, path_only;  // one kernel; "interpreted" or "compiled"
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ptx-dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) seconds = 0.05, quick = true;
    else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--path") && i + 1 < argc) path_only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--ptx-dir DIR] [--arch sm_75] [--seconds S] [--quick] [--kernel NAME] [--path interpreted|compiled]\n", argv[0]);
      return 2;
    }
  }
  const int n = 1 << 18, mm = 128;
  std::mt19937 rng(1);
  std::vector<float> a(n), b(n), c(n), out10(10 * 4096);
  for (auto& v : a) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (auto& v : b) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<float> A(mm * mm, 0.5f), B(mm * mm, 0.25f), C(mm * mm);
  std::vector<int> ints(n, 3), total(1), dout(n);
  for (auto& v : ints) v = static_cast<int>(rng() % 5000);

  std::vector<Case> cases = {
      {"elementwise", "vec_add", {n / 256}, {256}, 0,
       [&](const KernelInfo& k) { return Params(k).add(addr(a)).add(addr(b)).add(addr(c)).add(n).bytes(); }},
      {"matmul", "matmul_tiled", {mm / 16, mm / 16}, {16, 16}, 0,
       [&](const KernelInfo& k) {
         return Params(k).add(addr(A)).add(addr(B)).add(addr(C)).add(mm).add(mm).add(mm).bytes();
       }},
      {"reduce", "reduce_shfl", {64}, {256}, 0,
       [&](const KernelInfo& k) { return Params(k).add(addr(ints)).add(addr(total)).add(n).bytes(); }},
      {"math_funcs", "math_funcs", {16}, {256}, 0,
       [&](const KernelInfo& k) { return Params(k).add(addr(a)).add(addr(out10)).add(4096).bytes(); }},
      {"divergence", "divergence", {n / 128}, {128}, 0,
       [&](const KernelInfo& k) { return Params(k).add(addr(ints)).add(addr(dout)).add(n).bytes(); }},
  };
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  printf("%-14s %-14s %-11s %8s %14s %16s %9s %12s\n", "file", "kernel", "path", "workers", "thread-inst/s",
         "per-cpu-second", "launches", "first-ms");
  struct Summary {
    const char* kernel;
    double rate[2] = {0, 0};   // per CPU second, one worker: interpreted, compiled
    double first[2] = {0, 0};  // first launch (compiles on the compiled path), ms
    double compile_cpu_ms = 0;  // CPU time of the compile, ms
    bool compiled = false;
  };
  std::vector<Summary> summary;
  int failures = 0;
  for (const Case& cs : cases) {
    if (!only.empty() && only != cs.kernel) continue;
    std::string path = dir + "/" + cs.file + "." + arch + ".ptx";
    std::string text = read_file(path);
    Summary sum;
    sum.kernel = cs.kernel;
    // Interpreted, then compiled: each on a Program of its own, so the
    // compiled path's first launch pays its compile.
    for (int jit = 0; jit < 2; ++jit) {
      if ((path_only == "compiled" && jit == 0) || (path_only == "interpreted" && jit == 1)) continue;
      // The smoke run (--quick) compiles one kernel only: compiling costs seconds.
      if (quick && jit && &cs != &cases.front()) continue;
      auto prog = Program::parse(text);
      if (!prog.is_ok()) {
        fprintf(stderr, "%s: %s\n", path.c_str(), prog.status().to_string().c_str());
        ++failures;
        break;
      }
      int ki = (*prog)->find_kernel(cs.kernel);
      if (ki < 0) {
        fprintf(stderr, "%s: no kernel %s\n", path.c_str(), cs.kernel);
        ++failures;
        break;
      }
      std::vector<uint8_t> params = cs.params((*prog)->kernels()[static_cast<size_t>(ki)]);
      double first_ms = -1, compile_cpu_ms = 0;
      for (unsigned workers : {1u, cores}) {
        LaunchEnv env;
        env.workers = workers;
        env.jit = static_cast<int8_t>(jit);
        uint64_t inst = 0;
        int launches = 0;
        bool compiled = false;
        if (first_ms < 0) {
          auto t0 = std::chrono::steady_clock::now();
          LaunchResult r = (*prog)->launch(ki, cs.grid, cs.block, cs.shared, params.data(), params.size(), env);
          first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          compile_cpu_ms = static_cast<double>(r.compile_cpu_ns) / 1e6;
          if (!r.ok()) {
            fprintf(stderr, "%s: %s\n", cs.kernel, r.message.c_str());
            ++failures;
            break;
          }
        }
        auto start = std::chrono::steady_clock::now();
        double cpu_start = cpu_seconds();
        double elapsed = 0;
        do {
          LaunchResult r = (*prog)->launch(ki, cs.grid, cs.block, cs.shared, params.data(), params.size(), env);
          if (!r.ok()) {
            fprintf(stderr, "%s: %s\n", cs.kernel, r.message.c_str());
            ++failures;
            break;
          }
          compiled = r.compiled;
          inst += r.thread_instructions;
          ++launches;
          elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        } while (elapsed < seconds);
        double cpu = cpu_seconds() - cpu_start;
        const char* how = compiled ? "compiled" : jit ? "interp(fb)" : "interpreted";
        printf("%-14s %-14s %-11s %8u %14.3e %16.3e %9d %12.1f\n", cs.file, cs.kernel, how, workers,
               elapsed > 0 ? inst / elapsed : 0.0, cpu > 0 ? inst / cpu : 0.0, launches, first_ms);
        if (workers == 1) {
          sum.rate[jit] = cpu > 0 ? inst / cpu : 0.0;
          sum.first[jit] = first_ms;
          if (jit) sum.compile_cpu_ms = compile_cpu_ms;
          if (jit) sum.compiled = compiled;
        }
        if (workers == cores) break;
      }
    }
    summary.push_back(sum);
  }
  printf("\none worker, thread-instructions per CPU second:\n");
  printf("%-14s %14s %14s %8s %14s %14s %16s\n", "kernel", "interpreted", "compiled", "speedup", "first-ms(int)",
         "first-ms(jit)", "compile-cpu-ms");
  for (const Summary& s : summary)
    printf("%-14s %14.3e %14.3e %7.1fx %14.1f %14.1f %16.1f%s\n", s.kernel, s.rate[0], s.rate[1],
           s.rate[0] > 0 ? s.rate[1] / s.rate[0] : 0.0, s.first[0], s.first[1], s.compile_cpu_ms,
           s.compiled ? "" : "  (not compiled)");
  return failures ? 1 : 0;
}
