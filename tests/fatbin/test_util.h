// Helpers for the fatbin tests: load the images nvcc built for them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin::testing {

// Bytes of a generated image (tests/fatbin/data in the build tree); fails
// the test if missing.
inline std::vector<std::uint8_t> load(const std::string& name,
                                      const char* dir = RGPU_FATBIN_TEST_DATA) {
  std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing test image " << name;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::string_view text(const std::vector<std::uint8_t>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size()};
}

inline const KernelInfo* find_kernel(const std::vector<KernelInfo>& ks, std::string_view name) {
  for (const KernelInfo& k : ks) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

inline std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> layout(
    const KernelInfo& k) {
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> v;
  for (const KernelParam& p : k.params) v.emplace_back(p.ordinal, p.offset, p.size);
  return v;
}

using Layout = std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>;

}  // namespace rgpu::fatbin::testing
