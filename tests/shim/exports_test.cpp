// The library exports exactly the listed API names (driver, runtime and the
// CUDA libraries' lists), under SONAME libcuda.so.1.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

TEST(Exports, ListsAreSortedUniqueAndCoverTheImplementedList) {
  auto names = exported_names();
  ASSERT_GE(names.size(), 600u);
  EXPECT_TRUE(std::adjacent_find(names.begin(), names.end()) == names.end()) << "duplicate name";
  std::set<std::string> all(names.begin(), names.end());
  for (const auto& name : implemented_names()) EXPECT_TRUE(all.count(name)) << name;
}

TEST(Exports, EveryListedNameResolves) {
  ASSERT_NE(library(), nullptr);
  for (const auto& name : exported_names()) {
    EXPECT_NE(symbol(name.c_str()), nullptr) << name;
  }
}

TEST(Exports, DynsymHoldsExactlyTheListedNames) {
  std::string error;
  DynamicSymbols syms = read_dynamic_symbols(RGPU_SHIM_TEST_LIBRARY, &error);
  ASSERT_TRUE(error.empty()) << error;
  auto names = exported_names();
  std::set<std::string> want(names.begin(), names.end());
  for (auto& n : library_exported_names()) want.insert(n);
  for (const auto& n : runtime12_exported_names()) want.insert(n);  // libcudart.so.12's own names
  std::vector<std::string> extra, missing;
  std::set_difference(syms.functions.begin(), syms.functions.end(), want.begin(), want.end(),
                      std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), syms.functions.begin(), syms.functions.end(),
                      std::back_inserter(missing));
  EXPECT_TRUE(extra.empty()) << "exported but not listed, first: " << extra.front();
  EXPECT_TRUE(missing.empty()) << "listed but not exported, first: " << missing.front();
  EXPECT_TRUE(syms.others.empty()) << "exported object: " << *syms.others.begin();
  EXPECT_TRUE(syms.version_nodes.count("libcuda.so.1"));
  EXPECT_TRUE(syms.version_nodes.count("libcudart.so.13"));
  EXPECT_TRUE(syms.version_nodes.count("libcudart.so.12"));
}

TEST(Exports, SonameIsLibcudaSo1) {
  std::string error;
  DynamicSymbols syms = read_dynamic_symbols(RGPU_SHIM_TEST_LIBRARY, &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(syms.soname, "libcuda.so.1");
}

TEST(Exports, LoadedLibraryAnswersDlopenOfLibcudaSo1) {
  void* ours = library();
  ASSERT_NE(ours, nullptr);
  void* by_name = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(by_name, nullptr) << dlerror();
  EXPECT_EQ(dlsym(by_name, "cuGetProcAddress_v2"), symbol("cuGetProcAddress_v2"));
  dlclose(by_name);
}

}  // namespace
}  // namespace rgpu::shim::test
