// Choosing the code a device loads from an image, and its kernels.
#include <string_view>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

namespace {

// Whether code built for `arch` with entry `flags` may run on `sm`, given
// the code is a cubin (exact, or same family for family cubins) or PTX
// (any older arch, but exact for arch-specific and same family for family).
bool cubin_fits(const FatbinEntry& e, std::uint32_t sm) {
  if (e.arch == sm) return true;
  return (e.flags & kFlagArchFamily) && e.arch / 10 == sm / 10 && e.arch <= sm;
}

bool ptx_fits(const FatbinEntry& e, std::uint32_t sm) {
  if (e.arch > sm) return false;
  if (e.flags & kFlagArchSpecific) return e.arch == sm;
  if (e.flags & kFlagArchFamily) return e.arch / 10 == sm / 10;
  return true;
}

// The number after ".target sm_" or "compute_" in PTX text; 0 if absent.
std::uint32_t ptx_target_arch(std::string_view ptx) {
  const std::size_t t = ptx.find(".target");
  if (t == std::string_view::npos) return 0;
  std::size_t i = ptx.find("sm_", t);
  const std::size_t eol = ptx.find('\n', t);
  if (i == std::string_view::npos || (eol != std::string_view::npos && i > eol)) return 0;
  std::uint32_t v = 0;
  for (i += 3; i < ptx.size() && ptx[i] >= '0' && ptx[i] <= '9' && v < 100000; ++i) {
    v = v * 10 + static_cast<std::uint32_t>(ptx[i] - '0');
  }
  return v;
}

}  // namespace

const FatbinEntry* select_entry(const Fatbin& fb, std::uint32_t sm, SelectPolicy policy) {
  const FatbinEntry* best = nullptr;
  if (policy == SelectPolicy::kCubinOrPtx) {
    for (const FatbinEntry& e : fb.entries) {
      if (e.kind != EntryKind::kCubin || !cubin_fits(e, sm)) continue;
      // Exact arch first; among family cubins the newest.
      if (best == nullptr || (e.arch == sm && best->arch != sm) ||
          (best->arch != sm && e.arch > best->arch)) {
        best = &e;
      }
    }
    if (best != nullptr) return best;
  }
  for (const FatbinEntry& e : fb.entries) {
    if (e.kind != EntryKind::kPtx || !ptx_fits(e, sm)) continue;
    if (best == nullptr || e.arch > best->arch) best = &e;
  }
  return best;
}

Result<SelectedCode> select_code(Bytes image, std::uint32_t sm, SelectPolicy policy,
                                 const Limits& limits) {
  Result<DetectedImage> det = detect_image(image, limits);
  if (!det) return det.status();
  SelectedCode code;
  switch (det->kind) {
    case ImageKind::kFatbinWrapper:
      return invalid_argument("a fatbin wrapper refers to memory elsewhere; resolve it with "
                              "image_from_pointer first");
    case ImageKind::kElf: {
      if (policy == SelectPolicy::kPtxOnly) {
        return unimplemented("image is a cubin without ptx; this device needs ptx");
      }
      Result<ElfFile> elf = ElfFile::parse(det->bytes, limits);
      if (!elf) return elf.status();
      code.kind = EntryKind::kCubin;
      code.arch = elf->arch();
      code.contents.assign(det->bytes.begin(), det->bytes.end());
      return code;
    }
    case ImageKind::kPtx: {
      code.kind = EntryKind::kPtx;
      code.arch = ptx_target_arch(
          std::string_view(reinterpret_cast<const char*>(det->bytes.data()), det->bytes.size()));
      code.contents.assign(det->bytes.begin(), det->bytes.end());
      return code;
    }
    case ImageKind::kFatbin:
      break;
  }
  Result<Fatbin> fb = parse_fatbin(det->bytes, limits);
  if (!fb) return fb.status();
  const FatbinEntry* e = select_entry(*fb, sm, policy);
  if (e == nullptr) {
    std::string have;
    for (const FatbinEntry& x : fb->entries) {
      have += std::string(have.empty() ? "" : ",") + entry_kind_name(x.kind) + ":" + std::to_string(x.arch);
    }
    return invalid_argument("no fatbin entry fits sm_" + std::to_string(sm) + " (" +
                            (policy == SelectPolicy::kPtxOnly ? "ptx only" : "cubin or ptx") +
                            "); entries: " + (have.empty() ? "none" : have));
  }
  Result<std::vector<std::uint8_t>> contents = entry_contents(*e, limits);
  if (!contents) return contents.status();
  code.kind = e->kind;
  code.arch = e->arch;
  code.contents = std::move(*contents);
  return code;
}

Result<DeviceImage> image_for_device(Bytes fatbin, std::uint32_t sm, SelectPolicy policy,
                                     const Limits& limits) {
  Result<Fatbin> fb = parse_fatbin(fatbin, limits);
  if (!fb) return fb.status();
  const FatbinEntry* e = select_entry(*fb, sm, policy);
  if (e == nullptr && policy == SelectPolicy::kPtxOnly) e = select_entry(*fb, 0xffffffffu, policy);
  if (e == nullptr) return invalid_argument("no fatbin entry fits sm_" + std::to_string(sm));
  // The header, its size field rewritten, then the entry as stored.
  const std::size_t kHeader = static_cast<std::size_t>(fatbin[6]) | static_cast<std::size_t>(fatbin[7]) << 8;
  if (e->offset < kHeader || e->offset + e->stored_size > fb->total_size) {
    return invalid_argument("fatbin entry out of bounds");  // parse_fatbin checked this; be sure
  }
  DeviceImage out;
  out.kind = e->kind;
  out.arch = e->arch;
  out.image.assign(fatbin.begin(), fatbin.begin() + kHeader);
  const std::uint64_t size = e->stored_size;
  for (int i = 0; i < 8; ++i) out.image[8 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  out.image.insert(out.image.end(), fatbin.begin() + static_cast<std::ptrdiff_t>(e->offset),
                   fatbin.begin() + static_cast<std::ptrdiff_t>(e->offset + e->stored_size));
  return out;
}

Result<std::vector<KernelInfo>> kernels_from_image(Bytes image, std::uint32_t sm,
                                                   SelectPolicy policy, const Limits& limits) {
  Result<SelectedCode> code = select_code(image, sm, policy, limits);
  if (!code) return code.status();
  if (code->kind == EntryKind::kCubin) return kernels_from_cubin(Bytes(code->contents), limits);
  return kernels_from_ptx(
      std::string_view(reinterpret_cast<const char*>(code->contents.data()), code->contents.size()),
      limits);
}

}  // namespace rgpu::fatbin
