// Truncated and corrupted images: every parser must fail with an error,
// never crash or read outside the buffer (run under ASan to see the latter).
#include <cstring>
#include <random>

#include "test_util.h"

namespace rgpu::fatbin {
namespace {

using testing::load;

template <class T>
void put(std::vector<std::uint8_t>& v, std::size_t off, T value) {
  ASSERT_LE(off + sizeof(T), v.size());
  std::memcpy(v.data() + off, &value, sizeof(T));
}

// Runs every parser over `data`; returns whether the image was accepted
// (detected and, for a fatbin, parsed with all entries decoded).
bool exercise(Bytes data) {
  Limits limits;
  limits.max_decompressed_size = 16u << 20;
  bool ok = detect_image(data, limits).is_ok();
  (void)ElfFile::parse(data, limits);
  (void)kernels_from_cubin(data, limits);
  (void)kernels_from_image(data, 80, SelectPolicy::kCubinOrPtx, limits);
  Result<Fatbin> fb = parse_fatbin(data, limits);
  if (fb) {
    for (const FatbinEntry& e : fb->entries) {
      Result<std::vector<std::uint8_t>> c = entry_contents(e, limits);
      ok = ok && c.is_ok();
      if (c && e.kind == EntryKind::kCubin) (void)kernels_from_cubin(Bytes(*c), limits);
      if (c && e.kind == EntryKind::kPtx) (void)kernels_from_ptx(testing::text(*c), limits);
    }
  } else if (data.size() >= 4 && data[0] == 0x50 && data[1] == 0xed) {
    ok = false;
  }
  return ok;
}

TEST(Malformed, EveryTruncatedFatbinIsAnError) {
  for (const char* name : {"default.fatbin", "lz4_all.fatbin", "debug.fatbin"}) {
    std::vector<std::uint8_t> fb = load(name);
    for (std::size_t n = 0; n < fb.size(); ++n) {
      // A fresh allocation of exactly n bytes, so ASan sees any overread.
      std::vector<std::uint8_t> cut(fb.begin(), fb.begin() + n);
      ASSERT_FALSE(parse_fatbin(Bytes(cut))) << name << " cut at " << n;
      ASSERT_FALSE(detect_image(Bytes(cut))) << name << " cut at " << n;
    }
    EXPECT_TRUE(parse_fatbin(Bytes(fb)));
  }
}

TEST(Malformed, EveryTruncatedCubinIsAnError) {
  std::vector<std::uint8_t> elf = load("kernels_sm80.cubin");
  for (std::size_t n = 0; n < elf.size(); ++n) {
    std::vector<std::uint8_t> cut(elf.begin(), elf.begin() + n);
    ASSERT_FALSE(detect_image(Bytes(cut))) << "cut at " << n;
    (void)kernels_from_cubin(Bytes(cut));  // may succeed if only the tail is cut; must not crash
  }
}

TEST(Malformed, FatbinHeaderFields) {
  const std::vector<std::uint8_t> good = load("default.fatbin");
  ASSERT_TRUE(parse_fatbin(Bytes(good)));
  struct Case {
    const char* what;
    std::size_t off;
    std::uint64_t value;
    int width;
  } cases[] = {
      {"magic", 0, 0xBA55ED51, 4},
      {"header size below 16", 6, 8, 2},
      {"container size past the end", 8, 1u << 20, 8},
      {"container size overflow", 8, ~0ull, 8},
      {"entry header size too small", 16 + 4, 8, 4},
      {"entry header size past the end", 16 + 4, 1u << 20, 4},
      {"entry payload past the end", 16 + 8, 1u << 20, 8},
      {"entry payload overflow", 16 + 8, ~0ull - 8, 8},
      {"identifier outside the header", 16 + 32, 60, 4},
      {"identifier huge", 16 + 36, 0xffffffff, 4},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> bad = good;
    if (c.width == 2) put<std::uint16_t>(bad, c.off, static_cast<std::uint16_t>(c.value));
    if (c.width == 4) put<std::uint32_t>(bad, c.off, static_cast<std::uint32_t>(c.value));
    if (c.width == 8) put<std::uint64_t>(bad, c.off, c.value);
    if (std::string(c.what) == "identifier outside the header") {
      put<std::uint32_t>(bad, 16 + 36, 16);  // 60 + 16 > 64
    }
    Result<Fatbin> fb = parse_fatbin(Bytes(bad));
    EXPECT_FALSE(fb) << c.what;
    if (!fb) {
      EXPECT_EQ(fb.status().kind(), ErrorKind::kInvalidArgument) << c.what;
      EXPECT_FALSE(fb.status().message().empty());
    }
  }
}

// The second entry of default.fatbin is zstd-compressed PTX.
TEST(Malformed, CompressedPayloads) {
  const std::vector<std::uint8_t> good = load("default.fatbin");
  Result<Fatbin> fb = parse_fatbin(Bytes(good));
  ASSERT_TRUE(fb);
  ASSERT_EQ(fb->entries.size(), 2u);
  const std::size_t e = fb->entries[1].offset;
  ASSERT_EQ(fb->entries[1].compression, Compression::kZstd);

  {  // declared decompressed size disagrees with the frame
    std::vector<std::uint8_t> bad = good;
    put<std::uint64_t>(bad, e + 56, fb->entries[1].uncompressed_size + 1);
    Result<Fatbin> b = parse_fatbin(Bytes(bad));
    ASSERT_TRUE(b);
    Result<std::vector<std::uint8_t>> c = entry_contents(b->entries[1]);
    ASSERT_FALSE(c);
    EXPECT_NE(c.status().message().find("zstd"), std::string::npos) << c.status().message();
  }
  {  // decompressed size over the cap
    std::vector<std::uint8_t> bad = good;
    put<std::uint64_t>(bad, e + 56, 1ull << 40);
    EXPECT_FALSE(parse_fatbin(Bytes(bad)));
    Limits small;
    small.max_decompressed_size = 100;
    EXPECT_FALSE(parse_fatbin(Bytes(good), small));
  }
  {  // compressed size larger than the payload
    std::vector<std::uint8_t> bad = good;
    put<std::uint32_t>(bad, e + 16, 1u << 30);
    EXPECT_FALSE(parse_fatbin(Bytes(bad)));
  }
  {  // both compression flags
    std::vector<std::uint8_t> bad = good;
    put<std::uint64_t>(bad, e + 40, fb->entries[1].flags | kFlagCompressedLz4);
    EXPECT_FALSE(parse_fatbin(Bytes(bad)));
  }
  {  // zstd frame damaged in its body
    std::vector<std::uint8_t> bad = good;
    const std::size_t body = e + fb->entries[1].header_size;
    for (std::size_t i = 20; i < 60; ++i) bad[body + i] ^= 0x5a;
    Result<Fatbin> b = parse_fatbin(Bytes(bad));
    ASSERT_TRUE(b);
    Result<std::vector<std::uint8_t>> c = entry_contents(b->entries[1]);
    if (c) {
      // zstd has no mandatory checksum; damage may decode, but never to the original.
      Result<std::vector<std::uint8_t>> orig = entry_contents(fb->entries[1]);
      ASSERT_TRUE(orig);
      EXPECT_NE(*c, *orig);
    }
  }
  {  // an LZ4 block declared far larger than it can expand
    std::vector<std::uint8_t> lz = load("lz4_all.fatbin");
    Result<Fatbin> l = parse_fatbin(Bytes(lz));
    ASSERT_TRUE(l);
    ASSERT_EQ(l->entries[0].compression, Compression::kLz4);
    put<std::uint64_t>(lz, l->entries[0].offset + 56, l->entries[0].payload.size() * 1000ull);
    Result<Fatbin> b = parse_fatbin(Bytes(lz));
    ASSERT_TRUE(b);
    EXPECT_FALSE(entry_contents(b->entries[0]));
    // And one declared one byte short.
    put<std::uint64_t>(lz, l->entries[0].offset + 56, l->entries[0].uncompressed_size - 1);
    Result<Fatbin> s = parse_fatbin(Bytes(lz));
    ASSERT_TRUE(s);
    EXPECT_FALSE(entry_contents(s->entries[0]));
  }
}

TEST(Malformed, ElfHeaderAndSections) {
  const std::vector<std::uint8_t> good = load("kernels_sm80.cubin");
  ASSERT_TRUE(ElfFile::parse(Bytes(good)));
  auto fails = [](std::vector<std::uint8_t> bad, const char* what) {
    EXPECT_FALSE(ElfFile::parse(Bytes(bad))) << what;
    EXPECT_FALSE(detect_image(Bytes(bad))) << what;
  };
  std::vector<std::uint8_t> bad = good;
  bad[4] = 1;  // 32-bit class
  EXPECT_EQ(ElfFile::parse(Bytes(bad)).status().kind(), ErrorKind::kUnimplemented);
  bad = good;
  put<std::uint64_t>(bad, 0x28, good.size());  // section table past the end
  fails(bad, "shoff");
  bad = good;
  put<std::uint64_t>(bad, 0x28, ~0ull - 10);
  fails(bad, "shoff overflow");
  bad = good;
  put<std::uint16_t>(bad, 0x3a, 40);  // section header size
  fails(bad, "shentsize");

  std::uint64_t shoff = 0;
  std::memcpy(&shoff, good.data() + 0x28, 8);
  bad = good;
  put<std::uint64_t>(bad, shoff + 64 * 2 + 32, 1ull << 40);  // section 2 size
  fails(bad, "section size");
  bad = good;
  put<std::uint16_t>(bad, 0x3e, 0x7fff);  // name table index
  EXPECT_FALSE(ElfFile::parse(Bytes(bad)));
  bad = good;
  put<std::uint32_t>(bad, shoff + 64 * 3, 0xfffffff0);  // a section name offset
  EXPECT_FALSE(ElfFile::parse(Bytes(bad)));
}

TEST(Malformed, NvInfoRecords) {
  const std::vector<std::uint8_t> good = load("kernels_sm80.cubin");
  Result<ElfFile> f = ElfFile::parse(Bytes(good));
  ASSERT_TRUE(f);
  const ElfSection* info = f->find_section(".nv.info.axpy");
  ASSERT_NE(info, nullptr);
  ASSERT_GT(info->size, 8u);
  {  // unknown record format
    std::vector<std::uint8_t> bad = good;
    bad[info->offset] = 0x09;
    Result<std::vector<KernelInfo>> ks = kernels_from_cubin(Bytes(bad));
    ASSERT_FALSE(ks);
    EXPECT_NE(ks.status().message().find(".nv.info.axpy"), std::string::npos);
  }
  {  // a sized record that runs past the section
    std::vector<std::uint8_t> bad = good;
    bad[info->offset] = 0x04;
    put<std::uint16_t>(bad, info->offset + 2, 0xfff0);
    EXPECT_FALSE(kernels_from_cubin(Bytes(bad)));
  }
  {  // a parameter record pointing past the parameter bank
    std::vector<std::uint8_t> bad = good;
    Bytes sec = Bytes(bad).subspan(info->offset, info->size);
    bool patched = false;
    for (std::size_t i = 0; i + 16 <= sec.size(); i += 4) {
      if (sec[i] == 0x04 && sec[i + 1] == 0x17) {
        put<std::uint16_t>(bad, info->offset + i + 4 + 6, 0x4000);  // offset
        patched = true;
        break;
      }
    }
    ASSERT_TRUE(patched);
    EXPECT_FALSE(kernels_from_cubin(Bytes(bad)));
  }
}

// Deterministic random damage to real images: must never crash, and the
// original must still parse (the damage is applied to copies).
TEST(Malformed, RandomMutationsNeverCrash) {
  std::mt19937 rng(12345);
  const char* files[] = {"default.fatbin", "lz4_all.fatbin", "multi.fatbin",
                         "kernels_sm80.cubin", "launch_sm80.cubin"};
  for (const char* name : files) {
    const std::vector<std::uint8_t> good = load(name);
    ASSERT_FALSE(good.empty());
    ASSERT_TRUE(detect_image(Bytes(good))) << name;
    int rejected = 0;
    for (int iter = 0; iter < 300; ++iter) {
      std::vector<std::uint8_t> bad = good;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) {
        // Bias towards headers, where the offsets and sizes live.
        const std::size_t span = (rng() % 2) ? std::min<std::size_t>(bad.size(), 256) : bad.size();
        bad[rng() % span] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
      if (rng() % 4 == 0) bad.resize(rng() % bad.size());
      if (!exercise(Bytes(bad))) ++rejected;
    }
    EXPECT_TRUE(exercise(Bytes(good))) << name;
    // Truncation alone rejects a quarter of the copies.
    EXPECT_GT(rejected, 30) << name;
  }
}

TEST(Malformed, PtxGarbage) {
  std::mt19937 rng(99);
  std::string ptx(testing::text(load("kernels_sm80.ptx")));
  ASSERT_TRUE(kernels_from_ptx(ptx));
  for (int iter = 0; iter < 200; ++iter) {
    std::string bad = ptx;
    for (int k = 0; k < 6; ++k) {
      const char junk[] = "(){}[],;.\"/*0x9";
      bad[rng() % bad.size()] = junk[rng() % (sizeof junk - 1)];
    }
    (void)kernels_from_ptx(bad);
    (void)detect_image(Bytes(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size()));
  }
}

}  // namespace
}  // namespace rgpu::fatbin
