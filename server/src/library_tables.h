// The remoted libraries' function tables (cuBLAS, ...): each library is
// loaded on first use, as the driver is loaded at start, and the generated
// rows call it through its table (server/generated/library_tables_gen.h).
// With NVIDIA's driver the table is NVIDIA's library (libcublas.so.13); with
// rgpu's CPU device it is rgpu's CPU stand-in with the same ABI, found next
// to rgpud. The rows' code path is the same for both.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "call_env.h"
#include "library_tables_gen.h"

namespace rgpu::server {

// Owned by the server (through ServerInfo) and shared by every session; the
// tables live as long as it does, so a destroy function a session registered
// stays callable until the session is gone. Thread-safe: a library loads once,
// whichever session asks first; a library or a function that is missing
// stays missing (a null table or a null pointer), which the rows answer with
// the library's "not supported".
class LibraryTables {
 public:
  // `cpu_device`: look for rgpu's CPU stand-ins instead of NVIDIA's
  // libraries. `paths`: a file per library name ("cublas") that replaces
  // either (rgpud --library NAME=PATH; the tests' stand-ins).
  LibraryTables(bool cpu_device, std::map<std::string, std::string> paths);
  ~LibraryTables();
  LibraryTables(const LibraryTables&) = delete;
  LibraryTables& operator=(const LibraryTables&) = delete;

  // The table of library `index` (kLibraries), loading it on first use; null
  // when the library cannot be loaded.
  const void* table(size_t index);

  // The file library `index` is (or would be) loaded from.
  std::string path(size_t index) const;

 private:
  struct Slot {
    std::once_flag once;
    std::shared_ptr<void> dl;      // the dlopen handle, closed last
    std::shared_ptr<void> table;   // the typed table
  };
  const bool cpu_device_;
  const std::map<std::string, std::string> paths_;
  std::array<Slot, kLibraryCount> slots_;
};

// A library's table as the generated rows ask for it: null when this server
// has no such library (the row answers "not supported").
template <class Table>
const Table* library_table(const CallEnv& env) {
  return static_cast<const Table*>(env.library_table(Table::kIndex));
}

}  // namespace rgpu::server
