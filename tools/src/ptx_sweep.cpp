// rgpu-ptx-sweep: loads every PTX module embedded in a host ELF (a program or
// shared library built with nvcc) the way the CPU device would, and reports
// what parses, what does not, and what a launch would refuse.
//
//   rgpu-ptx-sweep [--sm N] [--top N] [--dump DIR] [--only I] ELF...
//
// For each fatbin of the ELF's .nv_fatbin section it picks the PTX entry a
// device of compute capability N (default 90) would get, decompresses it,
// and loads it with rgpu's PTX parser as cuModuleLoadData does on the CPU
// device (signatures only), then decodes every kernel as cuModuleGetFunction
// would and asks whether the interpreter can run all of it. --dump writes the PTX texts to DIR for inspection; never
// commit them.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "rgpu/fatbin/fatbin.h"
#include "rgpu/ptx/ptx.h"

namespace fatbin = rgpu::fatbin;

namespace {

struct Options {
  uint32_t sm = 90;
  size_t top = 10;
  std::string dump;
  long only = -1;  // index of the one fatbin to look at, -1: all
  std::vector<std::string> files;
};

// A read-only mapping of a whole file.
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st{};
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const uint8_t*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~Mapping() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  fatbin::Bytes bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The contents of the section `name` of a 64-bit little-endian ELF; empty
// when there is none. Reads only the section table (host libraries carry
// large symbol tables that a cubin reader need not walk).
fatbin::Bytes elf_section(fatbin::Bytes elf, const char* name) {
  auto rd = [&](size_t off, size_t n) -> uint64_t {
    uint64_t v = 0;
    if (off + n <= elf.size()) std::memcpy(&v, elf.data() + off, n);
    return v;
  };
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF\x02\x01", 6) != 0) return {};
  uint64_t shoff = rd(0x28, 8), shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2), shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shoff + shnum * shentsize > elf.size() || shstrndx >= shnum) return {};
  uint64_t strtab = rd(shoff + shstrndx * shentsize + 0x18, 8);
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t sh = shoff + i * shentsize;
    uint64_t name_off = strtab + rd(sh, 4);
    uint64_t off = rd(sh + 0x18, 8), size = rd(sh + 0x20, 8);
    if (name_off >= elf.size() || off + size > elf.size()) continue;
    const char* n = reinterpret_cast<const char*>(elf.data() + name_off);
    if (strnlen(n, elf.size() - name_off) == std::strlen(name) && std::strcmp(n, name) == 0) {
      return elf.subspan(off, size);
    }
  }
  return {};
}

// The instruction named in an unsupported-reason message ("unsupported
// instruction 'cp.async...' ..."), or the message's head.
std::string construct_of(const std::string& why) {
  size_t a = why.find('\'');
  size_t b = a == std::string::npos ? a : why.find('\'', a + 1);
  if (b != std::string::npos) return why.substr(a + 1, b - a - 1);
  return why.substr(0, std::min<size_t>(why.size(), 80));
}

struct ModuleResult {
  size_t index = 0;
  size_t ptx_bytes = 0;
  double client_ms = 0;      // what the client does: pick the entry, kernels' parameters, hash
  double load_ms = 0;        // Program::parse(kOnUse): what cuModuleLoadData costs
  double decode_all_ms = 0;  // every kernel prepared
  double decode_max_ms = 0;  // the slowest single kernel
  size_t kernels = 0;
  bool ok = false;
};

struct Totals {
  size_t fatbins = 0, no_ptx = 0, ok = 0, failed = 0, kernels = 0, kernels_unsupported = 0, kernels_failed = 0;
  uint64_t ptx_bytes = 0, fatbin_bytes = 0, selected_stored_bytes = 0;
  double load_ms = 0, decode_ms = 0, decode_max_ms = 0, client_ms = 0, client_max_ms = 0;
  std::map<std::string, size_t> failures;     // first error of a failed module -> modules
  std::map<std::string, size_t> unsupported;  // construct -> kernels refusing it
  std::map<std::string, std::string> unsupported_example;
  std::vector<ModuleResult> modules;
};

void sweep_fatbin(size_t index, fatbin::Bytes bytes, const Options& opt, Totals* t) {
  auto fb = fatbin::parse_fatbin(bytes);
  if (!fb) {
    ++t->failed;
    ++t->failures["fatbin: " + fb.status().message()];
    return;
  }
  t->fatbin_bytes += fb->total_size;
  const fatbin::FatbinEntry* e = fatbin::select_entry(*fb, opt.sm, fatbin::SelectPolicy::kPtxOnly);
  if (!e) {
    ++t->no_ptx;
    return;
  }
  t->selected_stored_bytes += e->header_size + e->payload.size();
  auto text = fatbin::entry_contents(*e);
  if (!text) {
    ++t->failed;
    ++t->failures["entry: " + text.status().message()];
    return;
  }
  std::string_view ptx(reinterpret_cast<const char*>(text->data()), text->size());
  if (!opt.dump.empty()) {
    std::string path = opt.dump + "/" + std::to_string(index) + ".ptx";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(ptx.data(), 1, ptx.size(), f);
      std::fclose(f);
    }
  }
  ModuleResult m;
  m.index = index;
  {
    // The client's share of a first launch: the entry the device runs (as a
    // fatbin of one entry), its kernels' parameter layouts, its hash.
    auto start = std::chrono::steady_clock::now();
    auto image = fatbin::image_for_device(bytes, opt.sm, fatbin::SelectPolicy::kPtxOnly);
    if (image) {
      auto k = fatbin::kernels_from_image(fatbin::Bytes(image->image), image->arch, fatbin::SelectPolicy::kPtxOnly);
      (void)fatbin::content_hash(fatbin::Bytes(image->image));
      if (!k) std::fprintf(stderr, "fatbin %zu: client kernels: %s\n", index, k.status().message().c_str());
    }
    m.client_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    t->client_ms += m.client_ms;
    t->client_max_ms = std::max(t->client_max_ms, m.client_ms);
  }
  m.ptx_bytes = ptx.size();
  t->ptx_bytes += ptx.size();
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  auto start = Clock::now();
  auto prog = rgpu::ptx::Program::parse(ptx, rgpu::ptx::Decode::kOnUse);
  m.load_ms = ms_since(start);
  t->load_ms += m.load_ms;
  if (!prog) {
    ++t->failed;
    std::string msg = prog.status().message();
    std::fprintf(stderr, "fatbin %zu: %s\n", index, msg.c_str());
    // "line N: what near 'x'": group by what, not by line.
    size_t colon = msg.find(": ");
    ++t->failures[colon == std::string::npos ? msg : msg.substr(colon + 2)];
    t->modules.push_back(m);
    return;
  }
  m.ok = true;
  ++t->ok;
  const auto& kernels = (*prog)->kernels();
  m.kernels = kernels.size();
  t->kernels += kernels.size();
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto one = Clock::now();
    rgpu::Status s = (*prog)->prepare(static_cast<int>(k));
    double ms = ms_since(one);
    m.decode_all_ms += ms;
    m.decode_max_ms = std::max(m.decode_max_ms, ms);
    if (!s.is_ok()) {
      ++t->kernels_failed;
      std::fprintf(stderr, "fatbin %zu kernel %zu: %s\n", index, k, s.message().c_str());
      size_t colon = s.message().find(": ");
      ++t->failures["kernel: " + (colon == std::string::npos ? s.message() : s.message().substr(colon + 2))];
      continue;
    }
    std::string why = (*prog)->unsupported_reason(static_cast<int>(k));
    if (why.empty()) continue;
    ++t->kernels_unsupported;
    std::string c = construct_of(why);
    if (t->unsupported[c]++ == 0) t->unsupported_example[c] = why;
  }
  t->decode_ms += m.decode_all_ms;
  t->decode_max_ms = std::max(t->decode_max_ms, m.decode_max_ms);
  t->modules.push_back(m);
}

int sweep_file(const std::string& path, const Options& opt) {
  Mapping map(path);
  if (map.bytes().empty()) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return 1;
  }
  fatbin::Bytes section = elf_section(map.bytes(), ".nv_fatbin");
  std::printf("== %s: .nv_fatbin %zu bytes\n", path.c_str(), section.size());
  Totals t;
  size_t off = 0;
  while (off + 16 <= section.size()) {
    uint32_t magic;
    std::memcpy(&magic, section.data() + off, 4);
    if (magic != fatbin::kFatbinMagic) {  // padding between fatbins
      off += 8;
      continue;
    }
    auto size = fatbin::fatbin_size(section.subspan(off));
    if (!size || *size > section.size() - off) {
      std::fprintf(stderr, "%s: bad fatbin at offset %zu\n", path.c_str(), off);
      return 1;
    }
    if (opt.only < 0 || static_cast<size_t>(opt.only) == t.fatbins) {
      sweep_fatbin(t.fatbins, section.subspan(off, *size), opt, &t);
    }
    ++t.fatbins;
    off += (*size + 7) / 8 * 8;
  }
  std::printf("fatbins %zu (%llu bytes), without ptx for sm_%u: %zu\n", t.fatbins,
              static_cast<unsigned long long>(t.fatbin_bytes), opt.sm, t.no_ptx);
  std::printf("selected ptx entries: %llu bytes stored, %llu bytes of ptx text\n",
              static_cast<unsigned long long>(t.selected_stored_bytes), static_cast<unsigned long long>(t.ptx_bytes));
  std::printf("client (entry, parameters, hash): total %.0f ms, slowest module %.1f ms\n", t.client_ms, t.client_max_ms);
  std::printf("modules loaded ok %zu, failed %zu; load time total %.0f ms\n", t.ok, t.failed, t.load_ms);
  std::printf("kernels %zu, decoded ok %zu, failed %zu; decode time total %.0f ms, slowest kernel %.1f ms\n",
              t.kernels, t.kernels - t.kernels_failed, t.kernels_failed, t.decode_ms, t.decode_max_ms);
  for (const auto& [what, n] : t.failures) std::printf("  failed %4zu  %s\n", n, what.c_str());
  std::printf("kernels refused at launch %zu\n", t.kernels_unsupported);
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [c, n] : t.unsupported) by_count.emplace_back(n, c);
  std::sort(by_count.rbegin(), by_count.rend());
  for (const auto& [n, c] : by_count) {
    std::printf("  refused %5zu  %-40s e.g. %s\n", n, c.c_str(), t.unsupported_example[c].c_str());
  }
  std::sort(t.modules.begin(), t.modules.end(),
            [](const ModuleResult& a, const ModuleResult& b) { return a.ptx_bytes > b.ptx_bytes; });
  std::printf("largest modules:\n");
  for (size_t i = 0; i < std::min(opt.top, t.modules.size()); ++i) {
    const ModuleResult& m = t.modules[i];
    std::printf("  fatbin %4zu  %9zu bytes  %5zu kernels  client %6.1f ms  load %7.1f ms  slowest kernel %7.1f ms  all kernels %8.1f ms  %s\n",
                m.index, m.ptx_bytes, m.kernels, m.client_ms, m.load_ms, m.decode_max_ms, m.decode_all_ms, m.ok ? "ok" : "FAILED");
  }
  return t.failed || t.kernels_failed ? 2 : 0;
}

void usage() {
  std::fprintf(stderr, "usage: rgpu-ptx-sweep [--sm N] [--top N] [--dump DIR] [--only INDEX] ELF...\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--sm" && (v = value())) {
      opt.sm = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (a == "--top" && (v = value())) {
      opt.top = std::strtoul(v, nullptr, 10);
    } else if (a == "--dump" && (v = value())) {
      opt.dump = v;
    } else if (a == "--only" && (v = value())) {
      opt.only = std::strtol(v, nullptr, 10);
    } else if (!a.empty() && a[0] != '-') {
      opt.files.push_back(a);
    } else {
      usage();
      return 1;
    }
  }
  if (opt.files.empty()) {
    usage();
    return 1;
  }
  int rc = 0;
  for (const auto& f : opt.files) rc = std::max(rc, sweep_file(f, opt));
  return rc;
}
