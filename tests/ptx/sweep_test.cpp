// The PTX conformance sweep: every corpus kernel, compiled by nvcc for each
// target architecture, loads, decodes and has no instruction the
// interpreter refuses. Prints the table docs/ptx-interpreter.md quotes.
// (The kernels' results are checked per architecture by the Corpus,
// CorpusMath and WarpSpecial suites.)
#include <sstream>

#include "harness.h"

namespace rgpu::ptx::testing {

TEST(Sweep, EveryCorpusKernelRunsOnEveryArch) {
  std::vector<std::string> stems;
  std::stringstream list(RGPU_PTX_CORPUS_LIST);
  for (std::string s; std::getline(list, s, ',');)
    if (!s.empty()) stems.push_back(s);
  ASSERT_GT(stems.size(), 20u);
  std::printf("| arch | modules | kernels | decoded | refused |\n|---|---:|---:|---:|---:|\n");
  for (const char* arch : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}) {
    size_t modules = 0, kernels = 0, decoded = 0, refused = 0;
    for (const auto& stem : stems) {
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
    std::printf("| compute_%s | %zu | %zu | %zu | %zu |\n", arch + 3, modules, kernels, decoded, refused);
  }
}

}  // namespace rgpu::ptx::testing
