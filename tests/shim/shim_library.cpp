// Test helpers: open the library under test, read lists and .dynsym.
#include "shim_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace rgpu::shim::test {
namespace {

std::vector<std::string> read_names(const std::string& path, bool allow_comments) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (allow_comments) line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name;
    if (words >> name) names.push_back(name);
  }
  return names;
}

}  // namespace

void* library() {
  static void* handle = [] {
    void* h = dlopen(RGPU_SHIM_TEST_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      ADD_FAILURE() << "dlopen " << RGPU_SHIM_TEST_LIBRARY << ": " << dlerror();
    }
    return h;
  }();
  return handle;
}

void* symbol(const char* name) {
  void* h = library();
  return h == nullptr ? nullptr : dlsym(h, name);
}

std::vector<std::string> exported_names() {
  std::vector<std::string> all;
  std::string lists = RGPU_SHIM_EXPORT_LISTS;
  std::size_t start = 0;
  while (start <= lists.size()) {
    std::size_t end = lists.find(':', start);
    if (end == std::string::npos) end = lists.size();
    for (auto& n : read_names(lists.substr(start, end - start), false)) all.push_back(n);
    start = end + 1;
  }
  std::sort(all.begin(), all.end());
  return all;
}

std::set<std::string> implemented_names() {
  std::set<std::string> all;
  std::string lists = RGPU_SHIM_IMPLEMENTED_LIST;  // ':'-separated, driver and runtime
  std::size_t start = 0;
  while (start <= lists.size()) {
    std::size_t end = lists.find(':', start);
    if (end == std::string::npos) end = lists.size();
    for (auto& n : read_names(lists.substr(start, end - start), true)) all.insert(n);
    start = end + 1;
  }
  return all;
}

std::vector<std::pair<std::string, std::string>> library_exports_by_soname() {
  std::vector<std::pair<std::string, std::string>> out;
  std::string lists = RGPU_SHIM_LIBRARY_EXPORT_LISTS;
  std::size_t start = 0;
  while (start < lists.size()) {
    std::size_t end = lists.find(':', start);
    if (end == std::string::npos) end = lists.size();
    const std::string path = lists.substr(start, end - start);
    std::string soname = path.substr(path.rfind('/') + 1);
    soname = soname.substr(0, soname.size() - std::string(".exports").size());
    for (auto& n : read_names(path, false)) out.emplace_back(soname, n);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> library_exported_names() {
  std::set<std::string> all;
  for (auto& [soname, name] : library_exports_by_soname()) all.insert(name);
  return {all.begin(), all.end()};
}

std::vector<std::string> runtime_exported_names() { return read_names(RGPU_SHIM_RUNTIME_EXPORTS, false); }

std::vector<std::string> runtime12_exported_names() { return read_names(RGPU_SHIM_RUNTIME12_EXPORTS, false); }

std::vector<std::string> driver_exported_names() {
  auto runtime = runtime_exported_names();
  std::set<std::string> skip(runtime.begin(), runtime.end());
  std::vector<std::string> out;
  for (auto& n : exported_names()) {
    if (!skip.count(n)) out.push_back(n);
  }
  return out;
}

DynamicSymbols read_dynamic_symbols(const std::string& path, std::string* error) {
  DynamicSymbols out;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const char* why) {
    *error = path + ": " + why;
    return DynamicSymbols{};
  };
  if (data.size() < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0 ||
      data[EI_CLASS] != ELFCLASS64) {
    return fail("not a 64-bit ELF file");
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff + eh.e_shnum * sizeof(Elf64_Shdr) > data.size()) {
    return fail("bad section headers");
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), data.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  auto string_at = [&](const Elf64_Shdr& strtab, std::size_t offset) -> std::string {
    std::size_t at = strtab.sh_offset + offset;
    if (at >= data.size()) return {};
    return std::string(data.data() + at, strnlen(data.data() + at, data.size() - at));
  };
  std::vector<uint16_t> versym;
  std::map<uint16_t, std::string> node_of;  // version index -> node name
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_link >= sections.size() || sh.sh_offset + sh.sh_size > data.size()) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_type == SHT_GNU_versym) {
      versym.resize(sh.sh_size / sizeof(uint16_t));
      std::memcpy(versym.data(), data.data() + sh.sh_offset, versym.size() * sizeof(uint16_t));
    } else if (sh.sh_type == SHT_GNU_verdef) {
      std::size_t at = sh.sh_offset;
      for (std::size_t i = 0; i < sh.sh_info && at + sizeof(Elf64_Verdef) <= data.size(); ++i) {
        Elf64_Verdef vd;
        std::memcpy(&vd, data.data() + at, sizeof vd);
        if (at + vd.vd_aux + sizeof(Elf64_Verdaux) > data.size()) break;
        Elf64_Verdaux aux;
        std::memcpy(&aux, data.data() + at + vd.vd_aux, sizeof aux);
        if (!(vd.vd_flags & VER_FLG_BASE)) node_of[vd.vd_ndx] = string_at(strtab, aux.vda_name);
        if (vd.vd_next == 0) break;
        at += vd.vd_next;
      }
    }
  }
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_link >= sections.size() || sh.sh_offset + sh.sh_size > data.size()) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_type == SHT_DYNSYM) {
      for (std::size_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, data.data() + sh.sh_offset + off, sizeof sym);
        int bind = ELF64_ST_BIND(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
        std::string name = string_at(strtab, sym.st_name);
        if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC || ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC) {
          out.functions.insert(name);
          const std::size_t index = off / sizeof(Elf64_Sym);
          const uint16_t v = index < versym.size() ? versym[index] & 0x7fff : 0;
          out.versions[name].insert(node_of.count(v) ? node_of[v] : std::string());
        } else if (sym.st_shndx == SHN_ABS && sym.st_value == 0 && sym.st_size == 0) {
          out.version_nodes.insert(name);  // how ld marks a version definition
        } else {
          out.others.insert(name);
        }
      }
    } else if (sh.sh_type == SHT_DYNAMIC) {
      for (std::size_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn;
        std::memcpy(&dyn, data.data() + sh.sh_offset + off, sizeof dyn);
        if (dyn.d_tag == DT_SONAME) out.soname = string_at(strtab, dyn.d_un.d_val);
      }
    }
  }
  if (out.functions.empty()) return fail("no exported functions");
  return out;
}

}  // namespace rgpu::shim::test
