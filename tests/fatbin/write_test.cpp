// build_fatbin: what it writes parses back, entry by entry, and selects as a
// compiler's fatbin does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {
namespace {

constexpr char kPtx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry twice(.param .u64 p)\n{\n  ret;\n}\n";

Bytes bytes_of(const std::string& s) { return Bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

TEST(BuildFatbin, ACubinAndItsPtxParseBack) {
  const std::string ptx = kPtx;
  const std::string cubin = "\x7f" "ELF-not-really-a-cubin-but-bytes";  // stored verbatim
  std::vector<NewEntry> entries(2);
  entries[0] = {EntryKind::kCubin, 80, 0, 0, bytes_of(cubin)};
  entries[1] = {EntryKind::kPtx, 80, 8, 0, bytes_of(ptx)};
  auto built = build_fatbin(entries);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  const std::vector<std::uint8_t>& fb = built.value();
  EXPECT_EQ(fb.size() % 8, 0u);

  auto detected = detect_image(Bytes(fb));
  ASSERT_TRUE(detected.is_ok());
  EXPECT_EQ(detected.value().kind, ImageKind::kFatbin);
  auto parsed = parse_fatbin(Bytes(fb));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed.value().entries.size(), 2u);
  EXPECT_EQ(parsed.value().total_size, fb.size());
  const FatbinEntry& c = parsed.value().entries[0];
  const FatbinEntry& p = parsed.value().entries[1];
  EXPECT_EQ(c.kind, EntryKind::kCubin);
  EXPECT_EQ(c.arch, 80u);
  EXPECT_EQ(p.kind, EntryKind::kPtx);
  EXPECT_EQ(p.arch, 80u);
  EXPECT_EQ(p.version_major, 8);
  EXPECT_EQ(p.flags, kFlag64Bit | kFlagLinux);
  EXPECT_TRUE(p.options.empty());
  auto cubin_back = entry_contents(c);
  ASSERT_TRUE(cubin_back.is_ok());
  EXPECT_EQ(std::string(cubin_back.value().begin(), cubin_back.value().begin() + cubin.size()), cubin);

  // A PTX-only device gets the PTX, and its kernels are found.
  auto kernels = kernels_from_image(Bytes(fb), 80, SelectPolicy::kPtxOnly);
  ASSERT_TRUE(kernels.is_ok()) << kernels.status().message();
  ASSERT_EQ(kernels.value().size(), 1u);
  EXPECT_EQ(kernels.value()[0].name, "twice");
  auto image = image_for_device(Bytes(fb), 80, SelectPolicy::kPtxOnly);
  ASSERT_TRUE(image.is_ok());
  EXPECT_EQ(image.value().kind, EntryKind::kPtx);
}

TEST(BuildFatbin, RefusesNothingToWriteAndOtherKinds) {
  EXPECT_FALSE(build_fatbin({}).is_ok());
  const std::string lto = "lto";
  NewEntry e{EntryKind::kLtoIr, 80, 0, 0, bytes_of(lto)};
  EXPECT_FALSE(build_fatbin(std::span<const NewEntry>(&e, 1)).is_ok());
}

}  // namespace
}  // namespace rgpu::fatbin
