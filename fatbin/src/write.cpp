// build_fatbin: the container layout of docs/fatbin.md, written.
#include <cstring>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {
namespace {

constexpr std::size_t kFatbinHeader = 16;
// The fixed part of an entry header, then the options record (two words)
// that PTX entries carry.
constexpr std::size_t kEntryHeader = 64;
constexpr std::size_t kOptionsRecord = 8;

template <typename T>
void put(std::vector<std::uint8_t>& out, std::size_t at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

}  // namespace

Result<std::vector<std::uint8_t>> build_fatbin(std::span<const NewEntry> entries) {
  if (entries.empty()) return invalid_argument("build_fatbin: no entries");
  std::vector<std::uint8_t> out(kFatbinHeader, 0);
  for (const NewEntry& e : entries) {
    const bool ptx = e.kind == EntryKind::kPtx;
    if (!ptx && e.kind != EntryKind::kCubin) return invalid_argument("build_fatbin: only ptx and cubin entries");
    // PTX is stored NUL-terminated, as nvcc stores it.
    const std::size_t code = e.payload.size() + (ptx ? 1 : 0);
    const std::size_t header = kEntryHeader + (ptx ? kOptionsRecord : 0);
    const std::size_t stored = padded(code);
    const std::size_t at = out.size();
    out.resize(at + header + stored, 0);
    put<std::uint16_t>(out, at + 0, static_cast<std::uint16_t>(e.kind));
    put<std::uint16_t>(out, at + 2, 0x0101);
    put<std::uint32_t>(out, at + 4, static_cast<std::uint32_t>(header));
    put<std::uint64_t>(out, at + 8, stored);
    if (ptx) put<std::uint32_t>(out, at + 20, static_cast<std::uint32_t>(kEntryHeader));  // empty options
    put<std::uint16_t>(out, at + 24, ptx ? e.version_minor : 8);
    put<std::uint16_t>(out, at + 26, ptx ? e.version_major : 1);
    put<std::uint32_t>(out, at + 28, e.arch);
    put<std::uint64_t>(out, at + 40, kFlag64Bit | kFlagLinux);
    if (ptx) put<std::uint32_t>(out, at + kEntryHeader, static_cast<std::uint32_t>(kEntryHeader + kOptionsRecord));
    if (!e.payload.empty()) std::memcpy(out.data() + at + header, e.payload.data(), e.payload.size());
  }
  put<std::uint32_t>(out, 0, kFatbinMagic);
  put<std::uint16_t>(out, 4, 1);
  put<std::uint16_t>(out, 6, static_cast<std::uint16_t>(kFatbinHeader));
  put<std::uint64_t>(out, 8, static_cast<std::uint64_t>(out.size() - kFatbinHeader));
  return out;
}

}  // namespace rgpu::fatbin
