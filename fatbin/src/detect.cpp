// Image detection: what cuModuleLoadData or __cudaRegisterFatBinary was given.
#include <algorithm>
#include <cstring>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

using detail::hex;
using detail::read_le;

namespace {

// sizeof(__fatBinC_Wrapper_t) on LP64: two ints and two pointers.
constexpr std::uint64_t kWrapperSize = 24;
constexpr std::uint32_t kWrapperVersion = 1;
constexpr std::uint32_t kWrapperLinkVersion = 2;
constexpr std::uint64_t kElfHeaderSize = 64;

bool is_elf(Bytes d) {
  return d.size() >= 4 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F';
}

// PTX is text and declares its ISA version. Anything else handed to
// cuModuleLoadData is not an image we know.
Status check_ptx(Bytes text) {
  if (text.empty()) return invalid_argument("empty image");
  for (std::uint8_t c : text) {
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v') {
      return invalid_argument("unknown image format: not a fatbin, elf or ptx text (byte " +
                              hex(c) + ")");
    }
  }
  std::string_view sv(reinterpret_cast<const char*>(text.data()), text.size());
  if (sv.find(".version") == std::string_view::npos) {
    return invalid_argument("unknown image format: text without a ptx .version directive");
  }
  return Status::ok();
}

Result<DetectedImage> detect_wrapper(Bytes data) {
  std::uint32_t version = 0;
  std::uint64_t fatbin = 0;
  if (!read_le(data, 4, &version) || !read_le(data, 8, &fatbin) || data.size() < kWrapperSize) {
    return invalid_argument("fatbin wrapper truncated: " + std::to_string(data.size()) + " bytes");
  }
  if (version != kWrapperVersion && version != kWrapperLinkVersion) {
    return unimplemented("fatbin wrapper version " + std::to_string(version));
  }
  if (fatbin == 0) return invalid_argument("fatbin wrapper holds a null fatbin pointer");
  return DetectedImage{ImageKind::kFatbinWrapper, data.first(kWrapperSize), fatbin};
}

}  // namespace

const char* image_kind_name(ImageKind kind) {
  switch (kind) {
    case ImageKind::kFatbin: return "fatbin";
    case ImageKind::kFatbinWrapper: return "fatbin-wrapper";
    case ImageKind::kElf: return "elf";
    case ImageKind::kPtx: return "ptx";
  }
  return "unknown";
}

Result<DetectedImage> detect_image(Bytes data, const Limits& limits) {
  std::uint32_t magic = 0;
  if (read_le(data, 0, &magic)) {
    if (magic == kFatbinMagic) {
      Result<std::uint64_t> size = fatbin_size(data, limits);
      if (!size) return size.status();
      if (*size > data.size()) {
        return invalid_argument("fatbin truncated: header declares " + std::to_string(*size) +
                                " bytes, have " + std::to_string(data.size()));
      }
      return DetectedImage{ImageKind::kFatbin, data.first(*size), 0};
    }
    if (magic == kFatbinWrapperMagic) return detect_wrapper(data);
    if (is_elf(data)) {
      Result<std::uint64_t> size = elf_size(data, limits);
      if (!size) return size.status();
      if (*size > data.size()) {
        return invalid_argument("elf truncated: image needs " + std::to_string(*size) +
                                " bytes, have " + std::to_string(data.size()));
      }
      return DetectedImage{ImageKind::kElf, data.first(*size), 0};
    }
  }
  auto nul = std::find(data.begin(), data.end(), std::uint8_t{0});
  Bytes text = data.first(static_cast<std::size_t>(nul - data.begin()));
  if (text.size() > limits.max_image_size) return invalid_argument("ptx text over the size limit");
  Status st = check_ptx(text);
  if (!st) return st;
  return DetectedImage{ImageKind::kPtx, text, 0};
}

Result<DetectedImage> image_from_pointer(const void* image, const Limits& limits) {
  if (image == nullptr) return invalid_argument("null image pointer");
  const auto* p = static_cast<const std::uint8_t*>(image);
  // No magic has a NUL byte, so stop at one: a short PTX string may end
  // right at the edge of readable memory.
  std::uint8_t head[4] = {};
  std::size_t n = 0;
  while (n < sizeof head && p[n] != 0) {
    head[n] = p[n];
    ++n;
  }
  std::uint32_t magic = 0;
  std::memcpy(&magic, head, sizeof magic);
  if (magic == kFatbinMagic) {
    Result<std::uint64_t> size = fatbin_size(Bytes(p, 16), limits);
    if (!size) return size.status();
    return DetectedImage{ImageKind::kFatbin, Bytes(p, *size), 0};
  }
  if (magic == kFatbinWrapperMagic) {
    Result<DetectedImage> w = detect_wrapper(Bytes(p, kWrapperSize));
    if (!w) return w;
    const auto* fb = reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(w->wrapped));
    std::uint32_t inner = 0;
    std::memcpy(&inner, fb, sizeof inner);
    if (inner != kFatbinMagic) {
      return invalid_argument("fatbin wrapper points at data without the fatbin magic: magic=" +
                              hex(inner));
    }
    Result<std::uint64_t> size = fatbin_size(Bytes(fb, 16), limits);
    if (!size) return size.status();
    return DetectedImage{ImageKind::kFatbin, Bytes(fb, *size), 0};
  }
  if (is_elf(Bytes(head, sizeof head))) {
    // Two steps: the header tells where the section table is; the section
    // table tells where the contents end.
    std::uint64_t shoff = 0, phoff = 0;
    std::uint16_t shentsize = 0, shnum = 0, phentsize = 0, phnum = 0;
    Bytes hdr(p, kElfHeaderSize);
    read_le(hdr, 0x20, &phoff);
    read_le(hdr, 0x28, &shoff);
    read_le(hdr, 0x36, &phentsize);
    read_le(hdr, 0x38, &phnum);
    read_le(hdr, 0x3a, &shentsize);
    read_le(hdr, 0x3c, &shnum);
    std::uint64_t end = kElfHeaderSize;
    const std::uint64_t sh = std::uint64_t{shnum} * shentsize;
    const std::uint64_t ph = std::uint64_t{phnum} * phentsize;
    if (shoff > limits.max_image_size || sh > limits.max_image_size - shoff ||
        phoff > limits.max_image_size || ph > limits.max_image_size - phoff) {
      return invalid_argument("elf header tables outside the size limit");
    }
    end = std::max({end, shoff + sh, phoff + ph});
    Result<std::uint64_t> size = elf_size(Bytes(p, end), limits);
    if (!size) return size.status();
    return DetectedImage{ImageKind::kElf, Bytes(p, *size), 0};
  }
  const std::size_t cap = static_cast<std::size_t>(
      std::min<std::uint64_t>(limits.max_image_size, SIZE_MAX - 1));
  const std::size_t len = strnlen(reinterpret_cast<const char*>(p), cap);
  if (len == cap) return invalid_argument("ptx text not terminated within the size limit");
  Bytes text(p, len);
  Status st = check_ptx(text);
  if (!st) return st;
  return DetectedImage{ImageKind::kPtx, text, 0};
}

}  // namespace rgpu::fatbin
