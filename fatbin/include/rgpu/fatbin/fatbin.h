// Module images as CUDA programs hand them over: detection (fatbin, nvcc's
// fatbin wrapper, ELF cubin, PTX text), the fatbin container and its entries,
// cubin ELF contents, kernel parameter layouts (from cubin .nv.info or PTX
// .entry) and a content hash. Pure parsing: no driver, no NVIDIA library.
//
// Types here are plain values (thread-compatible: const use from many
// threads is safe, mutation needs one owner) unless their comment says
// otherwise. Those holding a Bytes view borrow the caller's buffer, which
// must outlive them.
//
// Every function takes untrusted bytes: malformed input gives an error
// Status (kInvalidArgument, or kUnimplemented for a valid but unsupported
// feature), never a crash or a read outside the given span. The only
// functions that read through a raw pointer are image_from_pointer() and
// fatbin_from_wrapper(), which trust the pointer as cuModuleLoadData and
// __cudaRegisterFatBinary do, but still cap every size they derive.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::fatbin {

using Bytes = std::span<const std::uint8_t>;

inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;
inline constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u;

// Caps on what a parser will accept or produce. A value type; copy freely.
struct Limits {
  // Largest image (fatbin, cubin or PTX) accepted or derived from a header.
  std::uint64_t max_image_size = 4ull << 30;
  // Largest decompressed payload of one fatbin entry.
  std::uint64_t max_decompressed_size = 1ull << 30;
  // Most entries in one fatbin, sections/symbols in one ELF, params per kernel.
  std::uint32_t max_entries = 1u << 16;
};

// ---------------------------------------------------------------------------
// Detection

enum class ImageKind {
  kFatbin,         // starts with kFatbinMagic
  kFatbinWrapper,  // __fatBinC_Wrapper_t, pointing at a fatbin elsewhere
  kElf,            // an ELF cubin
  kPtx,            // NUL-terminated PTX text
};
const char* image_kind_name(ImageKind kind);

// What detect_image() found; borrows the caller's buffer. `bytes` is a view into the caller's buffer: the
// whole image (fatbin with header and entries, ELF up to its last section or
// header table, PTX text without its NUL); for a wrapper, the wrapper struct
// itself and `wrapped` is the fatbin address it holds (not dereferenced).
struct DetectedImage {
  ImageKind kind = ImageKind::kPtx;
  Bytes bytes;
  std::uint64_t wrapped = 0;
};

// Classifies `data` as cuModuleLoadDataEx would and finds the image's extent
// within it. Fails when the kind is unknown or the image does not fit.
Result<DetectedImage> detect_image(Bytes data, const Limits& limits = {});

// Registration / cuModuleLoadData path: only a pointer is known. Reads the
// header at `image` to learn the kind and total size (fatbin header; ELF
// section and program header tables; PTX up to its NUL, at most
// limits.max_image_size bytes). A wrapper is followed to its fatbin (the
// result is then kind kFatbin). The pointer must reference readable memory
// of at least the size its header declares, as with the CUDA driver.
Result<DetectedImage> image_from_pointer(const void* image, const Limits& limits = {});

// Total size in bytes (header + entries) of the fatbin at `data`, from its
// header alone; `data` must hold at least the 16-byte header.
Result<std::uint64_t> fatbin_size(Bytes header, const Limits& limits = {});

// ---------------------------------------------------------------------------
// The fatbin container

// The entry header's kind field. Values other than these are kept verbatim
// (static_cast) and never selected.
enum class EntryKind : std::uint16_t { kPtx = 1, kCubin = 2, kLtoIr = 8 };
const char* entry_kind_name(EntryKind kind);
enum class Compression { kNone, kLz4, kZstd };
const char* compression_name(Compression c);

// Entry header flag bits observed in nvcc 13 output (see docs/fatbin.md).
inline constexpr std::uint64_t kFlag64Bit = 0x1;
inline constexpr std::uint64_t kFlagDebug = 0x2;
inline constexpr std::uint64_t kFlagLinux = 0x10;
inline constexpr std::uint64_t kFlagCompressedLz4 = 0x2000;
inline constexpr std::uint64_t kFlagCompressedZstd = 0x8000;
// Set on compressed LTO-IR entries, whose payload is then also scrambled
// with a key at entry header offset 48; entry_contents() cannot read those.
inline constexpr std::uint64_t kFlagScrambled = 0x10000;
inline constexpr std::uint64_t kFlagArchSpecific = 0x100000;  // sm_90a, compute_90a
inline constexpr std::uint64_t kFlagArchFamily = 0x200000;    // sm_100f, compute_100f

// One entry of a fatbin. `payload` views the caller's buffer (compressed
// bytes if `compression` is not kNone); it is valid while that buffer is.
struct FatbinEntry {
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t arch = 0;           // 75 for sm_75 / compute_75
  std::uint16_t version_major = 0;  // PTX ISA version for PTX entries
  std::uint16_t version_minor = 0;
  std::uint64_t flags = 0;
  Compression compression = Compression::kNone;
  std::string identifier;  // source name (present with -G), may be empty
  // ptxas options carried with PTX; may be empty. For sm_100+ cubins this
  // record holds a small binary blob instead, kept verbatim.
  std::string options;
  std::uint64_t offset = 0;             // of the entry header within the fatbin
  std::uint64_t header_size = 0;
  std::uint64_t uncompressed_size = 0;  // size of the payload once decompressed
  Bytes payload;                        // stored bytes, padding excluded
  std::uint64_t stored_size = 0;        // bytes of the whole entry: header, payload, padding
};

// A parsed fatbin. Views the caller's buffer (see FatbinEntry::payload).
struct Fatbin {
  std::uint16_t version = 0;
  std::uint64_t total_size = 0;  // header + entries, bytes used from input
  std::vector<FatbinEntry> entries;
};

// Parses the fatbin at the start of `data` (trailing bytes are ignored; see
// total_size). Decompresses nothing.
Result<Fatbin> parse_fatbin(Bytes data, const Limits& limits = {});

// One entry to write: uncompressed code for one architecture.
struct NewEntry {
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t arch = 0;           // 80 for sm_80 / compute_80
  std::uint16_t version_major = 0;  // PTX: the ISA version of the text
  std::uint16_t version_minor = 0;
  Bytes payload;                    // PTX text (a NUL is added) or an ELF cubin
};

// A fatbin holding `entries`, uncompressed, for a 64-bit Linux host: what
// parse_fatbin() reads back and what a CUDA driver loads with
// cuModuleLoadData. Errors on an empty list or a kind other than PTX and
// cubin.
Result<std::vector<std::uint8_t>> build_fatbin(std::span<const NewEntry> entries);

// The payload of `entry`, decompressed when needed (LZ4 block or zstd
// frame), checked against the size the entry header declares. For PTX the
// result is the text without trailing NULs or padding. A scrambled payload
// (kFlagScrambled) gives kUnimplemented.
Result<std::vector<std::uint8_t>> entry_contents(const FatbinEntry& entry,
                                                 const Limits& limits = {});

enum class SelectPolicy {
  kCubinOrPtx,  // the cubin of exactly the wanted arch, else PTX (a GPU)
  kPtxOnly,     // always PTX (rgpu's CPU device)
};

// Best entry for a device of compute capability `sm` (e.g. 80): the cubin
// whose arch equals `sm` if allowed and present, otherwise the PTX with the
// highest arch <= `sm`. nullptr when nothing fits. The pointer is into `fb`.
const FatbinEntry* select_entry(const Fatbin& fb, std::uint32_t sm,
                                SelectPolicy policy = SelectPolicy::kCubinOrPtx);

// ---------------------------------------------------------------------------
// ELF cubin

// One ELF section header, its name resolved. Plain value.
struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
  std::uint64_t entsize = 0;
};

// One ELF symbol, its name resolved. Plain value.
struct ElfSymbol {
  std::string name;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
  std::uint8_t type = 0;     // STT_*
  std::uint8_t binding = 0;  // STB_*
  std::uint16_t section = 0;
};

// A parsed 64-bit little-endian cubin. Views the caller's buffer, which must
// outlive it. Immutable after parse; safe to share between threads.
class ElfFile {
 public:
  static Result<ElfFile> parse(Bytes data, const Limits& limits = {});

  // Target arch from e_flags (e.g. 80); 0 if not encoded there.
  std::uint32_t arch() const { return arch_; }
  std::uint32_t elf_flags() const { return elf_flags_; }
  const std::vector<ElfSection>& sections() const { return sections_; }
  const std::vector<ElfSymbol>& symbols() const { return symbols_; }
  // The section named `name`, or nullptr.
  const ElfSection* find_section(std::string_view name) const;
  // The bytes of `s` (empty for SHT_NOBITS); bounds were checked by parse().
  Bytes section_data(const ElfSection& s) const;
  Bytes bytes() const { return data_; }

 private:
  Bytes data_;
  std::uint32_t arch_ = 0;
  std::uint32_t elf_flags_ = 0;
  std::vector<ElfSection> sections_;
  std::vector<ElfSymbol> symbols_;
};

// Total size of the ELF image at `header` (the furthest of its header
// tables and section contents), reading the section table as needed.
// `avail` is how many bytes may be read from `header`.
Result<std::uint64_t> elf_size(Bytes avail, const Limits& limits = {});

// ---------------------------------------------------------------------------
// Kernels

// Where one kernel parameter lives in the parameter buffer. Plain value.
struct KernelParam {
  std::uint32_t ordinal = 0;
  std::uint32_t offset = 0;  // byte offset within the parameter buffer
  std::uint32_t size = 0;    // bytes
};

// What a launcher needs to know about one kernel. Names stay mangled.
// Plain value; owns its data.
struct KernelInfo {
  std::string name;
  std::vector<KernelParam> params;  // sorted by ordinal, ordinals 0..n-1
  std::uint32_t param_size = 0;     // bytes of the parameter buffer (cbank size)
  std::uint32_t max_threads = 0;    // product of maxntid/launch bounds; 0 if none
  std::array<std::uint32_t, 3> max_ntid{};  // 0s if not declared
  std::array<std::uint32_t, 3> req_ntid{};  // 0s if not declared
  std::uint32_t static_shared = 0;  // bytes of static shared memory (cubin only)
  std::uint32_t registers = 0;      // registers per thread (cubin only); 0 unknown
};

// Every kernel of a cubin, from its .nv.info.<kernel> sections (and
// .nv.shared.<kernel> sizes, .nv.info register counts).
Result<std::vector<KernelInfo>> kernels_from_cubin(const ElfFile& elf, const Limits& limits = {});
Result<std::vector<KernelInfo>> kernels_from_cubin(Bytes elf, const Limits& limits = {});

// Every `.entry` of PTX text, with parameter offsets following alignment.
Result<std::vector<KernelInfo>> kernels_from_ptx(std::string_view ptx, const Limits& limits = {});

// The code a device would load from an image: the image itself if it is a
// cubin or PTX, or for a fatbin the entry select_entry(fb, sm, policy)
// picks, decompressed. PTX comes without its NUL. Owns its bytes.
struct SelectedCode {
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t arch = 0;  // 0 when unknown (bare PTX without .target)
  std::vector<std::uint8_t> contents;
};
Result<SelectedCode> select_code(Bytes image, std::uint32_t sm,
                                 SelectPolicy policy = SelectPolicy::kCubinOrPtx,
                                 const Limits& limits = {});

// What a client sends a device instead of a whole multi-architecture
// fatbin: a fatbin holding only the entry the device will run, copied
// verbatim (still compressed). With kPtxOnly (rgpu's CPU device) that is the
// PTX select_entry() picks, or else the newest PTX there is (the interpreter
// is not tied to an architecture, and the CPU device falls back the same
// way); with kCubinOrPtx the cubin for `sm`, else the best PTX. `fatbin`
// must be a fatbin (detect_image kind kFatbin). Owns its bytes.
struct DeviceImage {
  std::vector<std::uint8_t> image;
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t arch = 0;  // of the entry kept
};
Result<DeviceImage> image_for_device(Bytes fatbin, std::uint32_t sm, SelectPolicy policy,
                                     const Limits& limits = {});

// Kernels of the code select_code() picks from `image`.
Result<std::vector<KernelInfo>> kernels_from_image(Bytes image, std::uint32_t sm,
                                                   SelectPolicy policy = SelectPolicy::kCubinOrPtx,
                                                   const Limits& limits = {});

// ---------------------------------------------------------------------------
// Content hash (SHA-256): stable across runs and machines, and collision
// resistant, so a server may share a module cache between sessions.

// A 256-bit digest. Plain value; compare with ==.
struct ContentHash {
  std::array<std::uint8_t, 32> bytes{};
  // The first 8 bytes, big-endian, for logs and hash tables.
  std::uint64_t prefix64() const;
  std::string to_hex() const;
  friend bool operator==(const ContentHash&, const ContentHash&) = default;
};

// For unordered containers keyed by ContentHash.
struct ContentHashHasher {
  std::size_t operator()(const ContentHash& h) const { return static_cast<std::size_t>(h.prefix64()); }
};

ContentHash content_hash(Bytes data);

}  // namespace rgpu::fatbin
