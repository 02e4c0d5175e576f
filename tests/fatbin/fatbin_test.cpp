// The fatbin container as nvcc 13 writes it: entries, flags, compression,
// entry selection.
#include "test_util.h"

namespace rgpu::fatbin {
namespace {

using testing::load;
using testing::text;

struct Parsed {
  std::vector<std::uint8_t> bytes;
  Fatbin fb;
};

Parsed parse(const std::string& name) {
  Parsed p{load(name), {}};
  Result<Fatbin> fb = parse_fatbin(Bytes(p.bytes));
  EXPECT_TRUE(fb) << name << ": " << fb.status().to_string();
  if (fb) p.fb = std::move(*fb);
  return p;
}

std::vector<std::uint8_t> contents(const FatbinEntry& e) {
  Result<std::vector<std::uint8_t>> c = entry_contents(e);
  EXPECT_TRUE(c) << c.status().to_string();
  return c ? std::move(*c) : std::vector<std::uint8_t>{};
}

const FatbinEntry* find(const Fatbin& fb, EntryKind kind, std::uint32_t arch) {
  for (const FatbinEntry& e : fb.entries) {
    if (e.kind == kind && e.arch == arch) return &e;
  }
  return nullptr;
}

TEST(Fatbin, DefaultHasSm75CubinAndZstdPtx) {
  Parsed p = parse("default.fatbin");
  EXPECT_EQ(p.fb.version, 1);
  EXPECT_EQ(p.fb.total_size, p.bytes.size());
  ASSERT_EQ(p.fb.entries.size(), 2u);
  const FatbinEntry& cubin = p.fb.entries[0];
  const FatbinEntry& ptx = p.fb.entries[1];
  EXPECT_EQ(cubin.kind, EntryKind::kCubin);
  EXPECT_EQ(cubin.arch, 75u);
  EXPECT_EQ(cubin.compression, Compression::kNone);
  EXPECT_TRUE(cubin.flags & kFlag64Bit);
  EXPECT_TRUE(cubin.flags & kFlagLinux);
  EXPECT_EQ(ptx.kind, EntryKind::kPtx);
  EXPECT_EQ(ptx.arch, 75u);
  EXPECT_EQ(ptx.compression, Compression::kZstd);
  EXPECT_TRUE(ptx.flags & kFlagCompressedZstd);
  EXPECT_EQ(ptx.version_major, 9);
  EXPECT_LT(ptx.payload.size(), ptx.uncompressed_size);

  std::vector<std::uint8_t> text_ptx = contents(ptx);
  EXPECT_NE(text(text_ptx).find(".target sm_75"), std::string_view::npos);
  EXPECT_NE(text(text_ptx).find(".entry axpy"), std::string_view::npos);
  EXPECT_EQ(text(text_ptx).find('\0'), std::string_view::npos);

  std::vector<std::uint8_t> elf = contents(cubin);
  Result<ElfFile> f = ElfFile::parse(Bytes(elf));
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_EQ(f->arch(), 75u);
}

// Every compression nvcc 13 produces decodes to the same code.
TEST(Fatbin, AllCompressionModesDecodeToTheSameCode) {
  Parsed none = parse("none.fatbin");
  ASSERT_EQ(none.fb.entries.size(), 2u);
  for (const FatbinEntry& e : none.fb.entries) EXPECT_EQ(e.compression, Compression::kNone);
  const std::vector<std::uint8_t> cubin = contents(none.fb.entries[0]);
  const std::vector<std::uint8_t> ptx = contents(none.fb.entries[1]);
  ASSERT_FALSE(cubin.empty());
  ASSERT_FALSE(ptx.empty());

  struct Case {
    const char* file;
    Compression cubin;
    Compression ptx;
  } cases[] = {
      {"default.fatbin", Compression::kNone, Compression::kZstd},
      {"size.fatbin", Compression::kZstd, Compression::kZstd},
      {"zstd_all.fatbin", Compression::kZstd, Compression::kZstd},
      {"lz4_all.fatbin", Compression::kLz4, Compression::kLz4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Parsed p = parse(c.file);
    ASSERT_EQ(p.fb.entries.size(), 2u);
    EXPECT_EQ(p.fb.entries[0].compression, c.cubin);
    EXPECT_EQ(p.fb.entries[1].compression, c.ptx);
    if (c.cubin == Compression::kLz4) {
      EXPECT_TRUE(p.fb.entries[0].flags & kFlagCompressedLz4);
    }
    // A compressed cubin can differ from an uncompressed one only by build
    // metadata; its size and kernel layouts must match.
    std::vector<std::uint8_t> got_cubin = contents(p.fb.entries[0]);
    EXPECT_EQ(got_cubin.size(), cubin.size());
    EXPECT_EQ(got_cubin, cubin);
    EXPECT_EQ(contents(p.fb.entries[1]), ptx);
  }
}

TEST(Fatbin, DebugEntriesCarryIdentifierAndOptions) {
  Parsed p = parse("debug.fatbin");
  ASSERT_EQ(p.fb.entries.size(), 2u);
  for (const FatbinEntry& e : p.fb.entries) {
    EXPECT_TRUE(e.flags & kFlagDebug);
    // The source path as nvcc was given it.
    EXPECT_TRUE(e.identifier.ends_with("/kernels.cu")) << e.identifier;
  }
  const FatbinEntry* ptx = find(p.fb, EntryKind::kPtx, 75);
  ASSERT_NE(ptx, nullptr);
  EXPECT_NE(ptx->options.find("-g"), std::string::npos) << ptx->options;
  EXPECT_FALSE(contents(*ptx).empty());
}

TEST(Fatbin, MultipleGencodes) {
  Parsed p = parse("multi.fatbin");
  ASSERT_EQ(p.fb.entries.size(), 4u);
  EXPECT_NE(find(p.fb, EntryKind::kCubin, 80), nullptr);
  EXPECT_NE(find(p.fb, EntryKind::kCubin, 90), nullptr);
  EXPECT_NE(find(p.fb, EntryKind::kPtx, 90), nullptr);
  EXPECT_NE(find(p.fb, EntryKind::kPtx, 75), nullptr);
  for (const FatbinEntry& e : p.fb.entries) {
    std::vector<std::uint8_t> c = contents(e);
    if (e.kind == EntryKind::kCubin) {
      Result<ElfFile> f = ElfFile::parse(Bytes(c));
      ASSERT_TRUE(f) << f.status().to_string();
      EXPECT_EQ(f->arch(), e.arch);
    } else {
      EXPECT_NE(text(c).find(".target sm_" + std::to_string(e.arch)), std::string_view::npos);
    }
  }
}

TEST(Fatbin, SelectEntryPrefersExactCubinThenNewestFittingPtx) {
  Parsed p = parse("multi.fatbin");
  auto pick = [&](std::uint32_t sm, SelectPolicy policy = SelectPolicy::kCubinOrPtx) {
    const FatbinEntry* e = select_entry(p.fb, sm, policy);
    return e == nullptr ? std::string("none")
                        : std::string(entry_kind_name(e->kind)) + ":" + std::to_string(e->arch);
  };
  EXPECT_EQ(pick(80), "cubin:80");
  EXPECT_EQ(pick(90), "cubin:90");
  EXPECT_EQ(pick(86), "ptx:75");
  EXPECT_EQ(pick(89), "ptx:75");
  EXPECT_EQ(pick(120), "ptx:90");
  EXPECT_EQ(pick(75), "ptx:75");
  EXPECT_EQ(pick(70), "none");
  EXPECT_EQ(pick(80, SelectPolicy::kPtxOnly), "ptx:75");
  EXPECT_EQ(pick(90, SelectPolicy::kPtxOnly), "ptx:90");
  EXPECT_EQ(pick(1000, SelectPolicy::kPtxOnly), "ptx:90");
}

TEST(Fatbin, ArchSpecificAndFamilyEntries) {
  Parsed p = parse("family.fatbin");
  ASSERT_EQ(p.fb.entries.size(), 4u);
  const FatbinEntry* a = find(p.fb, EntryKind::kPtx, 90);
  const FatbinEntry* f = find(p.fb, EntryKind::kPtx, 100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(a->flags & kFlagArchSpecific);
  EXPECT_TRUE(f->flags & kFlagArchFamily);
  auto pick = [&](std::uint32_t sm, SelectPolicy policy) {
    const FatbinEntry* e = select_entry(p.fb, sm, policy);
    return e == nullptr ? std::string("none")
                        : std::string(entry_kind_name(e->kind)) + ":" + std::to_string(e->arch);
  };
  EXPECT_EQ(pick(90, SelectPolicy::kCubinOrPtx), "cubin:90");
  EXPECT_EQ(pick(100, SelectPolicy::kCubinOrPtx), "cubin:100");
  EXPECT_EQ(pick(103, SelectPolicy::kCubinOrPtx), "cubin:100");  // same family
  EXPECT_EQ(pick(103, SelectPolicy::kPtxOnly), "ptx:100");
  EXPECT_EQ(pick(95, SelectPolicy::kPtxOnly), "none");   // 90a PTX is sm_90 only
  EXPECT_EQ(pick(120, SelectPolicy::kPtxOnly), "none");  // 100f PTX is family 10 only
  EXPECT_EQ(pick(120, SelectPolicy::kCubinOrPtx), "none");
}

// LTO-IR entries are parsed but never chosen for loading. Compressed ones
// are also scrambled, which entry_contents() says rather than misdecoding.
TEST(Fatbin, LtoIrEntriesAreNeverSelected) {
  Parsed p = parse("lto.fatbin");
  ASSERT_EQ(p.fb.entries.size(), 1u);
  const FatbinEntry& e = p.fb.entries[0];
  EXPECT_EQ(e.kind, EntryKind::kLtoIr);
  EXPECT_EQ(e.arch, 80u);
  EXPECT_STREQ(entry_kind_name(e.kind), "lto-ir");
  EXPECT_TRUE(e.flags & kFlagScrambled);
  EXPECT_EQ(entry_contents(e).status().kind(), ErrorKind::kUnimplemented);
  EXPECT_EQ(select_entry(p.fb, 80), nullptr);
  EXPECT_EQ(select_entry(p.fb, 80, SelectPolicy::kPtxOnly), nullptr);
  EXPECT_FALSE(select_code(Bytes(p.bytes), 80));

  Parsed plain = parse("lto_none.fatbin");
  ASSERT_EQ(plain.fb.entries.size(), 1u);
  EXPECT_FALSE(plain.fb.entries[0].flags & kFlagScrambled);
  std::vector<std::uint8_t> ir = contents(plain.fb.entries[0]);
  ASSERT_GE(ir.size(), 4u);
  EXPECT_EQ(ir[0], 0xed);  // NVVM IR container magic 0x7f4e43ed
  EXPECT_EQ(ir[3], 0x7f);
}

TEST(Fatbin, SelectCodeGivesDecompressedPtxOrCubin) {
  std::vector<std::uint8_t> fb = load("lz4_all.fatbin");
  Result<SelectedCode> ptx = select_code(Bytes(fb), 80, SelectPolicy::kPtxOnly);
  ASSERT_TRUE(ptx) << ptx.status().to_string();
  EXPECT_EQ(ptx->kind, EntryKind::kPtx);
  EXPECT_EQ(ptx->arch, 75u);
  EXPECT_NE(text(ptx->contents).find(".visible .entry axpy"), std::string_view::npos);

  Result<SelectedCode> cubin = select_code(Bytes(fb), 75);
  ASSERT_TRUE(cubin) << cubin.status().to_string();
  EXPECT_EQ(cubin->kind, EntryKind::kCubin);
  EXPECT_TRUE(ElfFile::parse(Bytes(cubin->contents)));

  Result<SelectedCode> none = select_code(Bytes(fb), 70);
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("ptx:75"), std::string::npos) << none.status().message();

  std::vector<std::uint8_t> elf = load("kernels_sm80.cubin");
  EXPECT_EQ(select_code(Bytes(elf), 80, SelectPolicy::kPtxOnly).status().kind(),
            ErrorKind::kUnimplemented);
  Result<SelectedCode> direct = select_code(Bytes(elf), 80);
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->arch, 80u);

  std::vector<std::uint8_t> text_ptx = load("kernels_sm80.ptx");
  Result<SelectedCode> bare = select_code(Bytes(text_ptx), 80, SelectPolicy::kPtxOnly);
  ASSERT_TRUE(bare) << bare.status().to_string();
  EXPECT_EQ(bare->arch, 80u);
  EXPECT_EQ(bare->contents.size(), text_ptx.size());
}

TEST(Fatbin, Names) {
  EXPECT_STREQ(compression_name(Compression::kLz4), "lz4");
  EXPECT_STREQ(compression_name(Compression::kZstd), "zstd");
  EXPECT_STREQ(compression_name(Compression::kNone), "none");
  EXPECT_STREQ(entry_kind_name(EntryKind::kPtx), "ptx");
  EXPECT_STREQ(entry_kind_name(EntryKind::kCubin), "cubin");
  EXPECT_STREQ(entry_kind_name(static_cast<EntryKind>(77)), "unknown");
}

}  // namespace
}  // namespace rgpu::fatbin
