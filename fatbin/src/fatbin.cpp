// The fatbin container: header, entry headers, payload decompression.
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

using detail::add_u64;
using detail::hex;
using detail::in_bounds;
using detail::read_le;

namespace {

constexpr std::uint64_t kFatbinHeaderSize = 16;
constexpr std::uint64_t kEntryHeaderSize = 64;

// A string record of an entry header: `size` bytes at `off` from the entry
// start, inside the entry header. Trailing NULs are dropped.
Status read_string(Bytes entry_header, std::uint32_t off, std::uint32_t size, const char* what,
                   std::string* out) {
  if (size == 0) return Status::ok();
  if (!in_bounds(entry_header.size(), off, size)) {
    return invalid_argument(std::string("fatbin entry ") + what + " outside its header: offset=" +
                            std::to_string(off) + " size=" + std::to_string(size));
  }
  const char* p = reinterpret_cast<const char*>(entry_header.data() + off);
  std::string s(p, size);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  *out = std::move(s);
  return Status::ok();
}

Status parse_entry(Bytes fb, std::uint64_t off, const Limits& limits, FatbinEntry* e,
                   std::uint64_t* next) {
  const std::string where = "fatbin entry at offset " + std::to_string(off);
  Bytes rest = fb.subspan(off);
  std::uint16_t kind = 0, entry_version = 0, minor = 0, major = 0;
  std::uint32_t header_size = 0, compressed_size = 0, options_off = 0, arch = 0, ident_off = 0,
                ident_size = 0;
  std::uint64_t payload_size = 0, flags = 0, uncompressed = 0;
  if (!read_le(rest, 0, &kind) || !read_le(rest, 2, &entry_version) ||
      !read_le(rest, 4, &header_size) || !read_le(rest, 8, &payload_size) ||
      !read_le(rest, 16, &compressed_size) || !read_le(rest, 20, &options_off) ||
      !read_le(rest, 24, &minor) || !read_le(rest, 26, &major) || !read_le(rest, 28, &arch) ||
      !read_le(rest, 32, &ident_off) || !read_le(rest, 36, &ident_size) ||
      !read_le(rest, 40, &flags) || !read_le(rest, 56, &uncompressed)) {
    return invalid_argument(where + ": truncated entry header (" + std::to_string(rest.size()) +
                            " bytes left, need " + std::to_string(kEntryHeaderSize) + ")");
  }
  (void)entry_version;
  if (header_size < kEntryHeaderSize || header_size > rest.size()) {
    return invalid_argument(where + ": bad entry header size " + std::to_string(header_size) +
                            " (" + std::to_string(rest.size()) + " bytes left)");
  }
  if (!in_bounds(rest.size(), header_size, payload_size)) {
    return invalid_argument(where + ": payload of " + std::to_string(payload_size) +
                            " bytes runs past the end of the fatbin");
  }
  Bytes header = rest.first(header_size);
  e->kind = static_cast<EntryKind>(kind);
  e->arch = arch;
  e->version_major = major;
  e->version_minor = minor;
  e->flags = flags;
  e->offset = off;
  e->header_size = header_size;
  Status st = read_string(header, ident_off, ident_size, "identifier", &e->identifier);
  if (!st) return invalid_argument(where + ": " + st.message());
  if (options_off != 0) {
    std::uint32_t str_off = 0, str_size = 0;
    if (!read_le(header, options_off, &str_off) || !read_le(header, options_off + 4ull, &str_size)) {
      return invalid_argument(where + ": options record at " + std::to_string(options_off) +
                              " outside the entry header");
    }
    st = read_string(header, str_off, str_size, "options", &e->options);
    if (!st) return invalid_argument(where + ": " + st.message());
  }
  const bool lz4 = flags & kFlagCompressedLz4;
  const bool zstd = flags & kFlagCompressedZstd;
  if (lz4 && zstd) return invalid_argument(where + ": both lz4 and zstd flags set: flags=" + hex(flags));
  std::uint64_t stored = payload_size;
  if (lz4 || zstd) {
    e->compression = lz4 ? Compression::kLz4 : Compression::kZstd;
    if (compressed_size == 0 || compressed_size > payload_size) {
      return invalid_argument(where + ": compressed size " + std::to_string(compressed_size) +
                              " does not fit the payload of " + std::to_string(payload_size));
    }
    if (uncompressed > limits.max_decompressed_size) {
      return invalid_argument(where + ": decompressed size " + std::to_string(uncompressed) +
                              " over the limit of " + std::to_string(limits.max_decompressed_size));
    }
    stored = compressed_size;
    e->uncompressed_size = uncompressed;
  } else {
    e->compression = Compression::kNone;
    e->uncompressed_size = payload_size;
  }
  e->payload = rest.subspan(header_size, stored);
  e->stored_size = header_size + payload_size;
  *next = off + header_size + payload_size;  // in bounds: checked above
  return Status::ok();
}

}  // namespace

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "unknown";
}

const char* entry_kind_name(EntryKind kind) {
  switch (kind) {
    case EntryKind::kPtx: return "ptx";
    case EntryKind::kCubin: return "cubin";
    case EntryKind::kLtoIr: return "lto-ir";
  }
  return "unknown";
}

Result<std::uint64_t> fatbin_size(Bytes header, const Limits& limits) {
  std::uint32_t magic = 0;
  std::uint16_t version = 0, header_size = 0;
  std::uint64_t body = 0;
  if (!read_le(header, 0, &magic) || !read_le(header, 4, &version) ||
      !read_le(header, 6, &header_size) || !read_le(header, 8, &body)) {
    return invalid_argument("fatbin header truncated: " + std::to_string(header.size()) +
                            " bytes, need " + std::to_string(kFatbinHeaderSize));
  }
  if (magic != kFatbinMagic) return invalid_argument("not a fatbin: magic=" + hex(magic));
  if (header_size < kFatbinHeaderSize) {
    return invalid_argument("fatbin header size too small: " + std::to_string(header_size));
  }
  std::uint64_t total = 0;
  if (!add_u64(header_size, body, &total) || total > limits.max_image_size) {
    return invalid_argument("fatbin size " + std::to_string(body) + " over the limit of " +
                            std::to_string(limits.max_image_size));
  }
  return total;
}

Result<Fatbin> parse_fatbin(Bytes data, const Limits& limits) {
  Result<std::uint64_t> total = fatbin_size(data, limits);
  if (!total) return total.status();
  if (*total > data.size()) {
    return invalid_argument("fatbin truncated: header declares " + std::to_string(*total) +
                            " bytes, have " + std::to_string(data.size()));
  }
  Fatbin fb;
  std::uint16_t header_size = 0;
  read_le(data, 4, &fb.version);
  read_le(data, 6, &header_size);
  fb.total_size = *total;
  Bytes body = data.first(*total);
  std::uint64_t off = header_size;
  while (off < body.size()) {
    if (fb.entries.size() >= limits.max_entries) {
      return invalid_argument("fatbin has more than " + std::to_string(limits.max_entries) +
                              " entries");
    }
    FatbinEntry e;
    std::uint64_t next = 0;
    Status st = parse_entry(body, off, limits, &e, &next);
    if (!st) return st;
    fb.entries.push_back(std::move(e));
    off = next;
  }
  return fb;
}

Result<std::vector<std::uint8_t>> entry_contents(const FatbinEntry& entry, const Limits& limits) {
  std::vector<std::uint8_t> out;
  const std::string where = std::string(entry_kind_name(entry.kind)) + " entry for arch " +
                            std::to_string(entry.arch);
  if (entry.flags & kFlagScrambled) {
    return unimplemented(where + ": payload is scrambled (flags=" + hex(entry.flags) +
                         "); only nvcc's own tools read it");
  }
  switch (entry.compression) {
    case Compression::kNone:
      out.assign(entry.payload.begin(), entry.payload.end());
      break;
    case Compression::kLz4: {
      if (entry.uncompressed_size > limits.max_decompressed_size ||
          entry.uncompressed_size > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE) * 256 ||
          entry.payload.size() > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE)) {
        return invalid_argument(where + ": lz4 sizes out of range");
      }
      // LZ4 expands at most ~255x; a larger claim is a corrupt header.
      if (entry.uncompressed_size > entry.payload.size() * 255ull + 64) {
        return invalid_argument(where + ": lz4 size " + std::to_string(entry.uncompressed_size) +
                                " impossible for " + std::to_string(entry.payload.size()) +
                                " compressed bytes");
      }
      out.resize(entry.uncompressed_size);
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(entry.payload.data()),
                                        reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(entry.payload.size()),
                                        static_cast<int>(out.size()));
      if (n < 0 || static_cast<std::uint64_t>(n) != entry.uncompressed_size) {
        return invalid_argument(where + ": lz4 payload corrupt (result=" + std::to_string(n) +
                                ", expected " + std::to_string(entry.uncompressed_size) + " bytes)");
      }
      break;
    }
    case Compression::kZstd: {
      if (entry.uncompressed_size > limits.max_decompressed_size) {
        return invalid_argument(where + ": zstd size out of range");
      }
      // A frame that states its content size must agree before we allocate.
      const unsigned long long framed =
          ZSTD_getFrameContentSize(entry.payload.data(), entry.payload.size());
      if (framed == ZSTD_CONTENTSIZE_ERROR) {
        return invalid_argument(where + ": not a zstd frame");
      }
      if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != entry.uncompressed_size) {
        return invalid_argument(where + ": zstd frame holds " + std::to_string(framed) +
                                " bytes, entry header says " +
                                std::to_string(entry.uncompressed_size));
      }
      out.resize(entry.uncompressed_size);
      const std::size_t n =
          ZSTD_decompress(out.data(), out.size(), entry.payload.data(), entry.payload.size());
      if (ZSTD_isError(n) || n != entry.uncompressed_size) {
        return invalid_argument(where + ": zstd payload corrupt (" +
                                (ZSTD_isError(n) ? std::string(ZSTD_getErrorName(n))
                                                 : "got " + std::to_string(n) + " bytes") +
                                ", expected " + std::to_string(entry.uncompressed_size) + " bytes)");
      }
      break;
    }
    default:
      return invalid_argument(where + ": unknown compression");
  }
  if (entry.kind == EntryKind::kPtx) {
    // PTX is NUL-terminated and padded; keep the text only.
    auto nul = std::find(out.begin(), out.end(), std::uint8_t{0});
    out.erase(nul, out.end());
  }
  return out;
}

}  // namespace rgpu::fatbin
