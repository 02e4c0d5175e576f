// ELF64 little-endian reader for cubins: header, sections, symbols.
#include <algorithm>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

using detail::add_u64;
using detail::hex;
using detail::in_bounds;
using detail::read_le;

namespace {

constexpr std::uint64_t kElfHeaderSize = 64;
constexpr std::uint64_t kSectionHeaderSize = 64;
constexpr std::uint64_t kSymbolSize = 24;
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::uint8_t kElfOsAbiCuda = 0x41;

struct ElfHeader {
  std::uint8_t abi_version = 0;
  std::uint8_t os_abi = 0;
  std::uint64_t phoff = 0, shoff = 0;
  std::uint32_t flags = 0;
  std::uint16_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0, shstrndx = 0;
};

Status read_header(Bytes d, ElfHeader* h) {
  if (d.size() < kElfHeaderSize) {
    return invalid_argument("elf header truncated: " + std::to_string(d.size()) + " bytes");
  }
  if (d[0] != 0x7f || d[1] != 'E' || d[2] != 'L' || d[3] != 'F') {
    return invalid_argument("not an elf image");
  }
  if (d[4] != 2) return unimplemented("elf class " + std::to_string(d[4]) + " (only 64-bit)");
  if (d[5] != 1) return unimplemented("elf data encoding " + std::to_string(d[5]) + " (only little-endian)");
  h->os_abi = d[7];
  h->abi_version = d[8];
  read_le(d, 0x20, &h->phoff);
  read_le(d, 0x28, &h->shoff);
  read_le(d, 0x30, &h->flags);
  read_le(d, 0x36, &h->phentsize);
  read_le(d, 0x38, &h->phnum);
  read_le(d, 0x3a, &h->shentsize);
  read_le(d, 0x3c, &h->shnum);
  read_le(d, 0x3e, &h->shstrndx);
  if (h->shnum != 0 && h->shentsize != kSectionHeaderSize) {
    return invalid_argument("elf section header size " + std::to_string(h->shentsize));
  }
  return Status::ok();
}

// End of the header and both header tables.
Result<std::uint64_t> tables_end(const ElfHeader& h) {
  std::uint64_t end = kElfHeaderSize, e = 0;
  if (h.shnum != 0) {
    if (!add_u64(h.shoff, std::uint64_t{h.shnum} * h.shentsize, &e)) {
      return invalid_argument("elf section table offset overflows: " + hex(h.shoff));
    }
    end = std::max(end, e);
  }
  if (h.phnum != 0) {
    if (!add_u64(h.phoff, std::uint64_t{h.phnum} * h.phentsize, &e)) {
      return invalid_argument("elf program table offset overflows: " + hex(h.phoff));
    }
    end = std::max(end, e);
  }
  return end;
}

// A NUL-terminated string at `off` within string table `strtab`.
Result<std::string> table_string(Bytes strtab, std::uint64_t off, const char* what) {
  if (off >= strtab.size()) {
    return invalid_argument(std::string("elf ") + what + " name offset " + std::to_string(off) +
                            " outside its string table");
  }
  const auto* begin = strtab.data() + off;
  const auto* end = std::find(begin, strtab.data() + strtab.size(), std::uint8_t{0});
  if (end == strtab.data() + strtab.size()) {
    return invalid_argument(std::string("elf ") + what + " name not terminated");
  }
  return std::string(reinterpret_cast<const char*>(begin), end - begin);
}

// Section headers; `name_offsets` gets each section's offset into the
// section name table, resolved once that table is known to be sound.
Status read_section_headers(Bytes d, const ElfHeader& h, const Limits& limits,
                            std::vector<ElfSection>* out, std::vector<std::uint32_t>* name_offsets) {
  if (h.shnum > limits.max_entries) {
    return invalid_argument("elf has too many sections: " + std::to_string(h.shnum));
  }
  if (!in_bounds(d.size(), h.shoff, std::uint64_t{h.shnum} * kSectionHeaderSize)) {
    return invalid_argument("elf section table outside the image: offset=" + std::to_string(h.shoff) +
                            " count=" + std::to_string(h.shnum) + " image=" + std::to_string(d.size()));
  }
  out->resize(h.shnum);
  name_offsets->resize(h.shnum);
  for (std::uint32_t i = 0; i < h.shnum; ++i) {
    const std::uint64_t at = h.shoff + i * kSectionHeaderSize;
    ElfSection& s = (*out)[i];
    read_le(d, at + 0, &(*name_offsets)[i]);
    read_le(d, at + 4, &s.type);
    read_le(d, at + 8, &s.flags);
    read_le(d, at + 24, &s.offset);
    read_le(d, at + 32, &s.size);
    read_le(d, at + 40, &s.link);
    read_le(d, at + 44, &s.info);
    read_le(d, at + 56, &s.entsize);
  }
  return Status::ok();
}

}  // namespace

Result<std::uint64_t> elf_size(Bytes avail, const Limits& limits) {
  ElfHeader h;
  Status st = read_header(avail, &h);
  if (!st) return st;
  Result<std::uint64_t> end = tables_end(h);
  if (!end) return end;
  if (*end > limits.max_image_size) {
    return invalid_argument("elf header tables end at " + std::to_string(*end) + ", over the limit");
  }
  std::uint64_t total = *end;
  if (h.shnum != 0) {
    if (!in_bounds(avail.size(), h.shoff, std::uint64_t{h.shnum} * kSectionHeaderSize)) {
      return invalid_argument("elf section table not readable: ends at " + std::to_string(*end) +
                              ", have " + std::to_string(avail.size()) + " bytes");
    }
    for (std::uint32_t i = 0; i < h.shnum; ++i) {
      const std::uint64_t at = h.shoff + i * kSectionHeaderSize;
      std::uint32_t type = 0;
      std::uint64_t off = 0, size = 0, e = 0;
      read_le(avail, at + 4, &type);
      read_le(avail, at + 24, &off);
      read_le(avail, at + 32, &size);
      if (type == kShtNobits || type == 0) continue;
      if (!add_u64(off, size, &e)) return invalid_argument("elf section " + std::to_string(i) + " overflows");
      total = std::max(total, e);
    }
  }
  if (total > limits.max_image_size) {
    return invalid_argument("elf image size " + std::to_string(total) + " over the limit of " +
                            std::to_string(limits.max_image_size));
  }
  return total;
}

Result<ElfFile> ElfFile::parse(Bytes data, const Limits& limits) {
  ElfHeader h;
  Status st = read_header(data, &h);
  if (!st) return st;
  ElfFile f;
  f.data_ = data;
  f.elf_flags_ = h.flags;
  // The CUDA ABI moved the SM number from bits 0-7 (ABI < 8) to bits 8-15.
  if (h.os_abi == kElfOsAbiCuda) {
    f.arch_ = h.abi_version >= 8 ? (h.flags >> 8) & 0xff : h.flags & 0xff;
  }
  std::vector<std::uint32_t> name_offsets;
  st = read_section_headers(data, h, limits, &f.sections_, &name_offsets);
  if (!st) return st;
  for (std::size_t i = 0; i < f.sections_.size(); ++i) {
    const ElfSection& s = f.sections_[i];
    if (s.type != kShtNobits && s.type != 0 && !in_bounds(data.size(), s.offset, s.size)) {
      return invalid_argument("elf section " + std::to_string(i) + " outside the image: offset=" +
                              std::to_string(s.offset) + " size=" + std::to_string(s.size));
    }
  }
  // Names: section header string table.
  Bytes shstr;
  if (h.shstrndx != 0) {
    if (h.shstrndx >= f.sections_.size()) {
      return invalid_argument("elf section name table index " + std::to_string(h.shstrndx) +
                              " out of range");
    }
    shstr = f.section_data(f.sections_[h.shstrndx]);
  }
  for (std::size_t i = 0; h.shstrndx != 0 && i < f.sections_.size(); ++i) {
    Result<std::string> name = table_string(shstr, name_offsets[i], "section");
    if (!name) return name.status();
    f.sections_[i].name = std::move(*name);
  }
  // Symbols: the first SHT_SYMTAB.
  for (const ElfSection& s : f.sections_) {
    if (s.type != kShtSymtab) continue;
    if (s.link >= f.sections_.size()) {
      return invalid_argument("elf symbol table links to missing section " + std::to_string(s.link));
    }
    Bytes syms = f.section_data(s);
    Bytes strtab = f.section_data(f.sections_[s.link]);
    const std::uint64_t count = syms.size() / kSymbolSize;
    if (count > limits.max_entries * 16ull) {
      return invalid_argument("elf has too many symbols: " + std::to_string(count));
    }
    f.symbols_.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t at = i * kSymbolSize;
      std::uint32_t name = 0;
      std::uint8_t info = 0;
      ElfSymbol sym;
      read_le(syms, at, &name);
      read_le(syms, at + 4, &info);
      read_le(syms, at + 6, &sym.section);
      read_le(syms, at + 8, &sym.value);
      read_le(syms, at + 16, &sym.size);
      sym.type = info & 0xf;
      sym.binding = info >> 4;
      Result<std::string> n = table_string(strtab, name, "symbol");
      if (!n) return n.status();
      sym.name = std::move(*n);
      f.symbols_.push_back(std::move(sym));
    }
    break;
  }
  return f;
}

const ElfSection* ElfFile::find_section(std::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Bytes ElfFile::section_data(const ElfSection& s) const {
  if (s.type == kShtNobits || s.type == 0 || !in_bounds(data_.size(), s.offset, s.size)) return {};
  return data_.subspan(s.offset, s.size);
}

}  // namespace rgpu::fatbin
