// libFuzzer harness: every parser of rgpu_fatbin over arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rgpu/fatbin/fatbin.h"

using namespace rgpu::fatbin;
using rgpu::Result;

namespace {

void kernels_of(const std::vector<std::uint8_t>& code, EntryKind kind, const Limits& limits) {
  if (kind == EntryKind::kCubin) {
    (void)kernels_from_cubin(Bytes(code), limits);
  } else {
    (void)kernels_from_ptx(
        std::string_view(reinterpret_cast<const char*>(code.data()), code.size()), limits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Limits limits;
  limits.max_decompressed_size = 8u << 20;
  limits.max_entries = 4096;
  const Bytes in(data, size);

  (void)detect_image(in, limits);
  (void)fatbin_size(in, limits);
  (void)content_hash(in);
  if (Result<Fatbin> fb = parse_fatbin(in, limits)) {
    for (const FatbinEntry& e : fb->entries) {
      Result<std::vector<std::uint8_t>> c = entry_contents(e, limits);
      if (c) kernels_of(*c, e.kind, limits);
    }
    (void)select_entry(*fb, 80);
  }
  (void)elf_size(in, limits);
  if (Result<ElfFile> elf = ElfFile::parse(in, limits)) {
    for (const ElfSection& s : elf->sections()) (void)elf->section_data(s);
    (void)kernels_from_cubin(*elf, limits);
  }
  (void)kernels_from_ptx(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  (void)kernels_from_image(in, 80, SelectPolicy::kCubinOrPtx, limits);
  (void)kernels_from_image(in, 90, SelectPolicy::kPtxOnly, limits);
  return 0;
}
