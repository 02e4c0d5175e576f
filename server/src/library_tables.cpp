// Loading the libraries' tables with dlopen/dlsym, on first use.
#include "library_tables.h"

#include <dlfcn.h>

#include <filesystem>
#include <tuple>
#include <utility>

#include "rgpu/common/log.h"

namespace rgpu::server {
namespace {

// rgpu's CPU stand-in `file` next to the running rgpud (the same folders the
// CPU device is looked for in), or "" when it is not there.
std::string next_to_rgpud(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || file.empty()) return "";
  fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / file, dir / "../lib" / file, dir / "../lib/rgpu" / file}) {
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return "";
}

template <class Table>
std::shared_ptr<void> resolve(void* dl) {
  auto table = std::make_shared<Table>();
  table->resolve([dl](const char* name) { return dlsym(dl, name); });
  return table;
}

// The typed table of library `index`, resolved from `dl`.
template <size_t... I>
std::shared_ptr<void> resolve_at(size_t index, void* dl, std::index_sequence<I...>) {
  std::shared_ptr<void> out;
  ((index == I ? (out = resolve<std::tuple_element_t<I, LibraryTableTypes>>(dl), 0) : 0), ...);
  return out;
}

}  // namespace

LibraryTables::LibraryTables(bool cpu_device, std::map<std::string, std::string> paths)
    : cpu_device_(cpu_device), paths_(std::move(paths)) {}

LibraryTables::~LibraryTables() {
  // Tables first, then the libraries they point into.
  for (Slot& s : slots_) s.table.reset();
}

std::string LibraryTables::path(size_t index) const {
  if (index >= kLibraryCount) return "";
  const LibraryInfo& info = kLibraries[index];
  if (auto it = paths_.find(info.name); it != paths_.end()) return it->second;
  return cpu_device_ ? next_to_rgpud(info.cpu) : info.cuda;
}

const void* LibraryTables::table(size_t index) {
  if (index >= kLibraryCount) return nullptr;
  Slot& slot = slots_[index];
  std::call_once(slot.once, [&] {
    const std::string file = path(index);
    void* dl = file.empty() ? nullptr : dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) {
      const char* why = file.empty() ? "not found next to rgpud" : dlerror();
      RGPU_WARN("library not loaded library=%s path=%s error=\"%s\"", kLibraries[index].name,
                file.empty() ? kLibraries[index].cpu : file.c_str(), why ? why : "unknown");
      return;
    }
    slot.dl = std::shared_ptr<void>(dl, [](void* h) { dlclose(h); });
    slot.table = resolve_at(index, dl, std::make_index_sequence<kLibraryCount>());
    RGPU_INFO("library loaded library=%s path=%s", kLibraries[index].name, file.c_str());
  });
  return slot.table.get();
}

}  // namespace rgpu::server
