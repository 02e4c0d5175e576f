// Static CUDA runtime detection by reading the program's ELF file.
//
// What tells the builds apart (checked on nvcc 13 output, stripped and not):
// `-cudart shared` programs list libcudart.so.13 in DT_NEEDED and import
// cudaMalloc@libcudart.so.13 and __cudaRegisterFatBinary@libcudart.so.13;
// static ones import no cuda* symbol and hold the runtime's own name strings
// ("__cudaPopCallConfiguration", "cudaErrorInitializationError") in .rodata.
// Neither `strip` nor the program's own code changes that; .nv_fatbin is no
// sign, since both builds have it.
#include "static_cudart.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <string_view>
#include <vector>

namespace rgpu::tools {
namespace {

// A read-only mapping of a whole file; empty when it cannot be mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

bool in_bounds(size_t size, uint64_t offset, uint64_t length) {
  return offset <= size && length <= size - offset;
}

// A NUL-terminated string at `offset` inside [table, table + table_size).
std::string_view string_at(const unsigned char* table, uint64_t table_size, uint64_t offset) {
  if (offset >= table_size) return {};
  const char* s = reinterpret_cast<const char*>(table + offset);
  size_t n = strnlen(s, table_size - offset);
  return n == table_size - offset ? std::string_view() : std::string_view(s, n);
}

bool contains(const unsigned char* p, uint64_t n, std::string_view what) {
  std::string_view hay(reinterpret_cast<const char*>(p), n);
  return hay.find(what) != std::string_view::npos;
}

bool is_runtime_name(std::string_view name) {
  return name.substr(0, 4) == "cuda" || name.substr(0, 6) == "__cuda";
}

}  // namespace

CudartInspection inspect_cudart(const std::string& path) {
  CudartInspection out;
  MappedFile file(path);
  const unsigned char* d = file.data();
  size_t size = file.size();
  if (!d || size < sizeof(Elf64_Ehdr) || std::memcmp(d, ELFMAG, SELFMAG) != 0) {
    out.reason = "not an ELF file";
    return out;
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, d, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    out.reason = "not a 64-bit little-endian ELF file";
    return out;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_bounds(size, eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    out.reason = "no readable section headers";
    return out;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (eh.e_shnum > 0) std::memcpy(sections.data(), d + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  auto section_ok = [&](const Elf64_Shdr& s) {
    return s.sh_type != SHT_NOBITS && in_bounds(size, s.sh_offset, s.sh_size);
  };
  auto linked_strings = [&](const Elf64_Shdr& s, const unsigned char** table, uint64_t* table_size) {
    if (s.sh_link >= sections.size() || !section_ok(sections[s.sh_link])) return false;
    *table = d + sections[s.sh_link].sh_offset;
    *table_size = sections[s.sh_link].sh_size;
    return true;
  };

  out.linkage = CudartLinkage::kNone;
  uint32_t dynstr_index = ~0u;
  for (const Elf64_Shdr& s : sections) {
    if (!section_ok(s)) continue;
    const unsigned char* strings = nullptr;
    uint64_t strings_size = 0;
    if (s.sh_type == SHT_DYNAMIC && linked_strings(s, &strings, &strings_size)) {
      dynstr_index = s.sh_link;
      for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= s.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn;
        std::memcpy(&dyn, d + s.sh_offset + off, sizeof(dyn));
        if (dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag != DT_NEEDED) continue;
        std::string_view lib = string_at(strings, strings_size, dyn.d_un.d_val);
        if (lib.substr(0, 12) == "libcudart.so") {
          out.linkage = CudartLinkage::kShared;
          out.reason = "needs " + std::string(lib);
          return out;
        }
      }
    } else if (s.sh_type == SHT_DYNSYM && linked_strings(s, &strings, &strings_size)) {
      for (uint64_t off = sizeof(Elf64_Sym); off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, d + s.sh_offset + off, sizeof(sym));
        if (sym.st_shndx != SHN_UNDEF) continue;
        std::string_view name = string_at(strings, strings_size, sym.st_name);
        if (is_runtime_name(name)) {
          out.linkage = CudartLinkage::kShared;
          out.reason = "imports " + std::string(name);
          return out;
        }
      }
    }
  }
  // No runtime imported: look for the static runtime's own strings in what
  // the program loads (never in the dynamic string table, which names imports).
  for (size_t i = 0; i < sections.size(); ++i) {
    const Elf64_Shdr& s = sections[i];
    if (!(s.sh_flags & SHF_ALLOC) || i == dynstr_index || !section_ok(s)) continue;
    const unsigned char* p = d + s.sh_offset;
    if (contains(p, s.sh_size, "__cudaPopCallConfiguration") && contains(p, s.sh_size, "cudaErrorInitializationError")) {
      out.linkage = CudartLinkage::kStatic;
      out.reason = "carries the static CUDA runtime";
      return out;
    }
  }
  out.reason = "no CUDA runtime linked";
  return out;
}

std::string resolve_command(const std::string& command) {
  if (command.empty()) return {};
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

int refuse_static_cudart(const std::string& command) {
  std::string path = resolve_command(command);
  if (path.empty()) return 0;  // execvp reports a missing command
  CudartInspection r = inspect_cudart(path);
  if (r.linkage != CudartLinkage::kStatic) return 0;
  std::fprintf(stderr,
               "rgpu: %s was built with the static CUDA runtime (nvcc's default), which rgpu cannot serve.\n"
               "rgpu: rebuild it with 'nvcc -cudart shared' (or link -lcudart instead of cudart_static) "
               "and run it again.\n",
               path.c_str());
  return 2;
}

}  // namespace rgpu::tools
