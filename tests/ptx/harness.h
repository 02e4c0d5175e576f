// Test helpers for running PTX kernels directly through the interpreter:
// host buffers stand in for device memory, checked against a table.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rgpu/ptx/ptx.h"

namespace rgpu::ptx::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The corpus comes in two compilations. "sm_XX": nvcc 13 at build time.
// "cuda12_sm_XX": CUDA 12.4's NVRTC, run by tests/ptx/cuda12_sweep.sh
// (tests/kernels/rtc_ptx.py), which names the folder in RGPU_PTX_CUDA12_DIR;
// without it there are no such architectures and their tests do not exist.
inline bool is_cuda12(const std::string& arch) { return arch.rfind("cuda12_", 0) == 0; }

inline std::vector<std::string> cuda12_archs() {
  const char* dir = std::getenv("RGPU_PTX_CUDA12_DIR");
  if (dir == nullptr || *dir == '\0') return {};
  return {"cuda12_sm_75", "cuda12_sm_80", "cuda12_sm_86", "cuda12_sm_89", "cuda12_sm_90"};
}

// The compute capability an architecture name ends in: 80 for sm_80.
inline int arch_number(const std::string& arch) { return std::stoi(arch.substr(arch.rfind("sm_") + 3)); }

// PTX of corpus kernel file `stem` compiled for `arch`.
inline std::string corpus_ptx(const std::string& stem, const std::string& arch) {
  const std::string dir = is_cuda12(arch) ? std::getenv("RGPU_PTX_CUDA12_DIR") : RGPU_PTX_DIR;
  return read_file(dir + "/" + stem + "." + arch + ".ptx");
}

// Whether the NVRTC compilation left `stem` out because it needs CUDA
// headers it was not given (listed in missing.txt).
inline bool corpus_missing(const std::string& stem, const std::string& arch) {
  if (!is_cuda12(arch)) return false;
  std::istringstream lines(read_file(std::string(std::getenv("RGPU_PTX_CUDA12_DIR")) + "/missing.txt"));
  for (std::string line; std::getline(lines, line);) {
    if (line.substr(0, line.find(' ')) == stem) return true;
  }
  return false;
}

// In a TEST_P over architectures: `Module var = load(stem)`, or the test is
// skipped when that compilation of the corpus left the file out.
#define RGPU_CORPUS_LOAD(var, stem)                                                                 \
  if (::rgpu::ptx::testing::corpus_missing(stem, GetParam()))                                      \
    GTEST_SKIP() << stem << " needs CUDA headers that this compilation of the corpus was not given"; \
  Module var = load(stem)

// The table of "device allocations": host vectors registered by address.
class DeviceTable {
 public:
  template <class T>
  uint64_t add(std::vector<T>& v) {
    uint64_t a = reinterpret_cast<uint64_t>(v.data());
    ranges_.push_back({a, v.size() * sizeof(T)});
    return a;
  }
  uint64_t add_bytes(void* p, size_t n) {
    uint64_t a = reinterpret_cast<uint64_t>(p);
    ranges_.push_back({a, n});
    return a;
  }
  bool contains(uint64_t addr, size_t size) const {
    MemoryExtent unused;
    return extent(addr, size, &unused);
  }
  // contains(), and the range that holds the access (buffers here are
  // never released during a launch).
  bool extent(uint64_t addr, size_t size, MemoryExtent* out) const {
    for (const auto& r : ranges_)
      if (addr >= r.first && addr + size <= r.first + r.second && addr + size >= addr) {
        *out = MemoryExtent{r.first, r.first + r.second, &kNeverReleased, 0};
        return true;
      }
    return false;
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

// Packs kernel arguments at the offsets of the kernel's .entry parameters.
class Args {
 public:
  explicit Args(const KernelInfo& k) : k_(k), buf_(k.param_bytes) {}
  template <class T>
  Args& add(const T& v) {
    EXPECT_LT(next_, k_.params.size()) << "too many arguments for " << k_.name;
    if (next_ >= k_.params.size()) return *this;
    const ParamInfo& p = k_.params[next_++];
    EXPECT_EQ(p.size, sizeof(T)) << "argument " << next_ - 1 << " of " << k_.name;
    memcpy(buf_.data() + p.offset, &v, std::min<size_t>(sizeof(T), p.size));
    return *this;
  }
  const void* data() const { return buf_.data(); }
  size_t size() const { return buf_.size(); }
  bool complete() const { return next_ == k_.params.size(); }

 private:
  const KernelInfo& k_;
  std::vector<uint8_t> buf_;
  size_t next_ = 0;
};

// A parsed module plus launch helpers. Fails the test on parse errors.
// With RGPU_PTX_SEED_DIR set, every module a test parses is also written
// there (named by a hash of its text): the hand-written PTX of these tests
// (tensor cores, cp.async, ...) seeds the parser's fuzzer (run_fuzz.cmake).
inline void keep_as_seed(const std::string& text) {
  const char* dir = std::getenv("RGPU_PTX_SEED_DIR");
  if (dir == nullptr || *dir == '\0') return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof name, "/%016llx.ptx", static_cast<unsigned long long>(h));
  std::ofstream(std::string(dir) + name, std::ios::binary) << text;
}

class Module {
 public:
  explicit Module(const std::string& text, Decode decode = Decode::kAll) {
    keep_as_seed(text);
    auto r = Program::parse(text, decode);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r.is_ok()) return;
    prog_ = std::move(r.value());
    // Module variables get their own "device" storage, filled from the initializers.
    for (const VariableInfo& v : prog_->variables()) {
      vars_.emplace_back();
      if (v.space == Space::kShared || v.is_extern) {
        addrs_.push_back(0);
        continue;
      }
      vars_.back().assign(v.size + 16, 0);
      if (!v.init.empty()) memcpy(vars_.back().data(), v.init.data(), v.init.size());
      addrs_.push_back(var_table_.add_bytes(vars_.back().data(), v.size));
    }
  }
  uint64_t variable_address(const std::string& name) const {
    int i = prog_->find_variable(name);
    return i < 0 ? 0 : addrs_[static_cast<size_t>(i)];
  }
  bool ok() const { return prog_ != nullptr; }
  Program& program() { return *prog_; }
  const KernelInfo& kernel(const std::string& name) {
    int i = prog_->find_kernel(name);
    EXPECT_GE(i, 0) << name;
    return prog_->kernels()[static_cast<size_t>(i < 0 ? 0 : i)];
  }
  Args args(const std::string& name) { return Args(kernel(name)); }

  LaunchResult launch(const std::string& name, Dim3 grid, Dim3 block, const Args& a, const DeviceTable& mem,
                      uint32_t dyn_shared = 0, LaunchEnv env = {}) {
    EXPECT_TRUE(a.complete()) << "missing arguments for " << name;
    env.checker = [this, &mem](uint64_t addr, size_t size, bool) {
      return mem.contains(addr, size) || var_table_.contains(addr, size);
    };
    env.extent = [this, &mem](uint64_t addr, size_t size, bool, MemoryExtent* out) {
      return mem.extent(addr, size, out) || var_table_.extent(addr, size, out);
    };
    env.variable_addresses = addrs_;
    if (!env.printf_sink) {
      env.printf_sink = [this](std::string_view s) {
        std::lock_guard<std::mutex> lock(mu_);
        printed_.emplace_back(s);
      };
    }
    if (env.workers == 0) env.workers = 2;
    int i = prog_->find_kernel(name);
    return prog_->launch(i, grid, block, dyn_shared, a.data(), a.size(), env);
  }
  std::vector<std::string> printed() {
    std::lock_guard<std::mutex> lock(mu_);
    return printed_;
  }

 private:
  std::unique_ptr<Program> prog_;
  std::vector<std::vector<uint8_t>> vars_;
  std::vector<uint64_t> addrs_;
  DeviceTable var_table_;
  std::mutex mu_;
  std::vector<std::string> printed_;
};

template <class T>
std::vector<T> random_vector(size_t n, T lo, T hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) x = std::uniform_real_distribution<T>(lo, hi)(rng);
    else x = static_cast<T>(std::uniform_int_distribution<long long>(lo, hi)(rng));
  }
  return v;
}

// |a - b| <= abs_tol + rel_tol * |b|
template <class T>
::testing::AssertionResult near_all(const std::vector<T>& got, const std::vector<T>& want, double rel_tol,
                                    double abs_tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= abs_tol + rel_tol * std::fabs(w)))
      return ::testing::AssertionFailure() << "index " << i << ": got " << g << " want " << w;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rgpu::ptx::testing
