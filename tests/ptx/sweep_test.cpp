// The PTX conformance sweep: every corpus kernel, compiled for each target
// architecture, loads, decodes and has no instruction the interpreter
// refuses. Prints the tables docs/ptx-interpreter.md quotes. (The kernels'
// results are checked per architecture by the Corpus, CorpusMath and
// WarpSpecial suites.)
#include <sstream>

#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

void sweep(const std::vector<std::string>& archs) {
  std::vector<std::string> stems;
  std::stringstream list(RGPU_PTX_CORPUS_LIST);
  for (std::string s; std::getline(list, s, ',');)
    if (!s.empty()) stems.push_back(s);
  ASSERT_GT(stems.size(), 20u);
  std::printf("| arch | modules | kernels | decoded | refused | left out |\n|---|---:|---:|---:|---:|---:|\n");
  for (const std::string& arch : archs) {
    size_t modules = 0, kernels = 0, decoded = 0, refused = 0, left_out = 0;
    for (const auto& stem : stems) {
      if (corpus_missing(stem, arch)) {
        ++left_out;
        continue;
      }
      std::string text = corpus_ptx(stem, arch);
      ASSERT_FALSE(text.empty()) << stem << " " << arch;
      auto p = Program::parse(text);
      ASSERT_TRUE(p.is_ok()) << stem << " " << arch << ": " << p.status().to_string();
      ++modules;
      const Program& prog = *p.value();
      for (size_t k = 0; k < prog.kernels().size(); ++k) {
        ++kernels;
        Status s = prog.prepare(static_cast<int>(k));
        EXPECT_TRUE(s.is_ok()) << stem << " " << arch << ": " << s.to_string();
        if (!s.is_ok()) continue;
        ++decoded;
        std::string why = prog.unsupported_reason(static_cast<int>(k));
        if (!why.empty()) ++refused;
        EXPECT_EQ(why, "") << stem << " " << arch;
      }
    }
    const std::string name = "compute_" + std::to_string(arch_number(arch));
    std::printf("| %s%s | %zu | %zu | %zu | %zu | %zu |\n", is_cuda12(arch) ? "CUDA 12.4 NVRTC " : "nvcc 13 ",
                name.c_str(), modules, kernels, decoded, refused, left_out);
  }
}

}  // namespace

TEST(Sweep, EveryCorpusKernelRunsOnEveryArch) { sweep({"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}); }

// The corpus as CUDA 12.4's NVRTC compiles it (tests/ptx/cuda12_sweep.sh).
TEST(Sweep, Cuda12NvrtcCorpus) {
  if (cuda12_archs().empty()) GTEST_SKIP() << "RGPU_PTX_CUDA12_DIR not set: run tests/ptx/cuda12_sweep.sh";
  sweep(cuda12_archs());
}

}  // namespace rgpu::ptx::testing
