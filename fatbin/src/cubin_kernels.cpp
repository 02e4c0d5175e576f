// Kernel attributes from a cubin's .nv.info sections.
#include <algorithm>
#include <map>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

using detail::read_le;

namespace {

// .nv.info record formats: a 4-byte head {format, attribute, u16}. For
// kSval the u16 is the size of the value that follows; otherwise it is the
// value itself (kNval: none).
constexpr std::uint8_t kNval = 0x01;
constexpr std::uint8_t kBval = 0x02;
constexpr std::uint8_t kHval = 0x03;
constexpr std::uint8_t kSval = 0x04;

// Attributes (EIATTR_*) that rgpu reads; values observed in nvcc 13 output.
constexpr std::uint8_t kAttrMaxThreads = 0x05;      // u32 x, y, z (__launch_bounds__, .maxntid)
constexpr std::uint8_t kAttrParamCbank = 0x0a;      // u32 section, u16 offset, u16 size
constexpr std::uint8_t kAttrReqNtid = 0x10;         // u32 x, y, z (.reqntid)
constexpr std::uint8_t kAttrKparamInfo = 0x17;      // u32 index, u16 ordinal, u16 offset, u32 bits
constexpr std::uint8_t kAttrCbankParamSize = 0x19;  // u16 in the head
constexpr std::uint8_t kAttrRegcount = 0x2f;        // u32 symbol, u32 registers (global .nv.info)

constexpr char kInfoPrefix[] = ".nv.info.";
constexpr char kSharedPrefix[] = ".nv.shared.";
constexpr char kTextPrefix[] = ".text.";

struct Record {
  std::uint8_t format = 0;
  std::uint8_t attr = 0;
  std::uint16_t head = 0;
  Bytes value;
};

// Calls `fn` for each record of an .nv.info section; stops at the first
// error (malformed record, or one `fn` reports).
template <class Fn>
Status for_each_record(Bytes info, const std::string& where, Fn&& fn) {
  std::uint64_t off = 0;
  while (off < info.size()) {
    Record r;
    if (!read_le(info, off, &r.format) || !read_le(info, off + 1, &r.attr) ||
        !read_le(info, off + 2, &r.head)) {
      return invalid_argument(where + ": truncated record at offset " + std::to_string(off));
    }
    off += 4;
    if (r.format == kSval) {
      if (!detail::in_bounds(info.size(), off, r.head)) {
        return invalid_argument(where + ": record at offset " + std::to_string(off - 4) +
                                " runs past the section (" + std::to_string(r.head) + " bytes)");
      }
      r.value = info.subspan(off, r.head);
      off += r.head;
    } else if (r.format != kNval && r.format != kBval && r.format != kHval) {
      return invalid_argument(where + ": unknown record format " + std::to_string(r.format) +
                              " at offset " + std::to_string(off - 4));
    }
    Status st = fn(r);
    if (!st) return st;
  }
  return Status::ok();
}

Status read_xyz(const Record& r, const std::string& where, std::array<std::uint32_t, 3>* out) {
  if (r.value.size() < 12) return invalid_argument(where + ": short thread-count record");
  for (int i = 0; i < 3; ++i) read_le(r.value, 4ull * i, &(*out)[i]);
  return Status::ok();
}

std::uint32_t product(const std::array<std::uint32_t, 3>& v) {
  std::uint64_t p = 1;
  for (std::uint32_t x : v) p *= std::max<std::uint32_t>(x, 1);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(p, UINT32_MAX));
}

Status kernel_from_info(const ElfFile& elf, const ElfSection& sec, const Limits& limits,
                        KernelInfo* k) {
  const std::string where = "cubin " + sec.name;
  bool have_cbank_size = false;
  std::uint32_t cbank_size = 0;
  Status st = for_each_record(elf.section_data(sec), where, [&](const Record& r) -> Status {
    switch (r.attr) {
      case kAttrKparamInfo: {
        if (r.format != kSval || r.value.size() < 12) {
          return invalid_argument(where + ": short parameter record");
        }
        if (k->params.size() >= limits.max_entries) {
          return invalid_argument(where + ": too many parameters");
        }
        std::uint16_t ordinal = 0, offset = 0;
        std::uint32_t bits = 0;
        read_le(r.value, 4, &ordinal);
        read_le(r.value, 6, &offset);
        read_le(r.value, 8, &bits);
        k->params.push_back({ordinal, offset, (bits >> 18) & 0x3fff});
        return Status::ok();
      }
      case kAttrParamCbank:
        if (r.format == kSval && r.value.size() >= 8 && !have_cbank_size) {
          std::uint16_t size = 0;
          read_le(r.value, 6, &size);
          cbank_size = size;
        }
        return Status::ok();
      case kAttrCbankParamSize:
        if (r.format == kHval) {
          cbank_size = r.head;
          have_cbank_size = true;
        }
        return Status::ok();
      case kAttrMaxThreads:
        return r.format == kSval ? read_xyz(r, where, &k->max_ntid) : Status::ok();
      case kAttrReqNtid:
        return r.format == kSval ? read_xyz(r, where, &k->req_ntid) : Status::ok();
      default:
        return Status::ok();
    }
  });
  if (!st) return st;
  std::sort(k->params.begin(), k->params.end(),
            [](const KernelParam& a, const KernelParam& b) { return a.ordinal < b.ordinal; });
  std::uint32_t end = 0;
  for (std::size_t i = 0; i < k->params.size(); ++i) {
    const KernelParam& p = k->params[i];
    if (p.ordinal != i) {
      return invalid_argument(where + ": parameter ordinals not 0..n-1 (found " +
                              std::to_string(p.ordinal) + " at position " + std::to_string(i) + ")");
    }
    end = std::max(end, p.offset + p.size);
  }
  k->param_size = cbank_size != 0 ? cbank_size : end;
  if (end > k->param_size) {
    return invalid_argument(where + ": parameters end at " + std::to_string(end) +
                            ", past the parameter bank of " + std::to_string(k->param_size));
  }
  if (k->max_ntid[0] != 0) {
    k->max_threads = product(k->max_ntid);
  } else if (k->req_ntid[0] != 0) {
    k->max_threads = product(k->req_ntid);
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<KernelInfo>> kernels_from_cubin(const ElfFile& elf, const Limits& limits) {
  std::vector<KernelInfo> kernels;
  std::map<std::string, std::size_t, std::less<>> by_name;
  for (const ElfSection& sec : elf.sections()) {
    if (sec.name.rfind(kInfoPrefix, 0) != 0) continue;
    KernelInfo k;
    k.name = sec.name.substr(sizeof(kInfoPrefix) - 1);
    if (k.name.empty()) continue;
    Status st = kernel_from_info(elf, sec, limits, &k);
    if (!st) return st;
    by_name[k.name] = kernels.size();
    kernels.push_back(std::move(k));
  }
  for (const ElfSection& sec : elf.sections()) {
    if (sec.name.rfind(kSharedPrefix, 0) == 0) {
      auto it = by_name.find(std::string_view(sec.name).substr(sizeof(kSharedPrefix) - 1));
      if (it != by_name.end()) {
        kernels[it->second].static_shared =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(sec.size, UINT32_MAX));
      }
    } else if (sec.name.rfind(kTextPrefix, 0) == 0) {
      // The top byte of a kernel's .text sh_info holds its register count.
      auto it = by_name.find(std::string_view(sec.name).substr(sizeof(kTextPrefix) - 1));
      if (it != by_name.end() && kernels[it->second].registers == 0) {
        kernels[it->second].registers = sec.info >> 24;
      }
    }
  }
  // The global .nv.info has exact register counts per function symbol.
  if (const ElfSection* info = elf.find_section(".nv.info")) {
    Status st = for_each_record(elf.section_data(*info), "cubin .nv.info", [&](const Record& r) {
      if (r.attr != kAttrRegcount || r.format != kSval || r.value.size() < 8) return Status::ok();
      std::uint32_t sym = 0, regs = 0;
      read_le(r.value, 0, &sym);
      read_le(r.value, 4, &regs);
      if (sym < elf.symbols().size()) {
        auto it = by_name.find(elf.symbols()[sym].name);
        if (it != by_name.end()) kernels[it->second].registers = regs;
      }
      return Status::ok();
    });
    if (!st) return st;
  }
  return kernels;
}

Result<std::vector<KernelInfo>> kernels_from_cubin(Bytes elf, const Limits& limits) {
  Result<ElfFile> f = ElfFile::parse(elf, limits);
  if (!f) return f.status();
  return kernels_from_cubin(*f, limits);
}

}  // namespace rgpu::fatbin
