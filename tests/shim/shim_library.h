// Test helpers: the client library under test (opened with dlopen), its
// export lists, and the names its ELF .dynsym really exports.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rgpu::shim::test {

// The library under test, opened once per process and never closed.
// Thread-safe after the first call; aborts the test on failure.
void* library();
// dlsym in the library under test; nullptr if absent.
void* symbol(const char* name);
template <typename Fn>
Fn function(const char* name) {
  return reinterpret_cast<Fn>(symbol(name));
}

// Every name the export lists say the library exports, sorted.
std::vector<std::string> exported_names();
// Names listed in the generated driver_implemented.txt and
// runtime_implemented.txt (comments and blanks dropped).
std::set<std::string> implemented_names();
// The runtime API's names (libcudart.exports), sorted.
std::vector<std::string> runtime_exported_names();
// CUDA 12's runtime names (libcudart12.exports), sorted; exported under
// libcudart.so.12, many also under libcudart.so.13.
std::vector<std::string> runtime12_exported_names();
// The driver API's names (exported_names() without the runtime's), sorted.
std::vector<std::string> driver_exported_names();

// Every name the CUDA libraries' export lists (libcublas.so.12.exports, ...)
// name, once, sorted; and (soname, name) for each list entry.
std::vector<std::string> library_exported_names();
std::vector<std::pair<std::string, std::string>> library_exports_by_soname();

// Defined global or weak symbols in an ELF file's .dynsym, by kind.
struct DynamicSymbols {
  std::set<std::string> functions;
  // The version nodes each function is defined under ("" : unversioned).
  std::map<std::string, std::set<std::string>> versions;
  std::set<std::string> others;  // defined non-function symbols other than version nodes
  std::set<std::string> version_nodes;
  std::string soname;
};
// Reads `path`; on failure returns an empty result and sets *error.
DynamicSymbols read_dynamic_symbols(const std::string& path, std::string* error);

}  // namespace rgpu::shim::test
