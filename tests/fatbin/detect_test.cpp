// Image detection: fatbin, wrapper, ELF, PTX, by span and by pointer.
#include <cstring>

#include "test_util.h"

namespace rgpu::fatbin {
namespace {

using testing::load;

// The layout of __fatBinC_Wrapper_t (fatbinary_section.h).
struct Wrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* filename_or_fatbins;
};

TEST(Detect, FatbinSpanCoversExactlyTheContainer) {
  std::vector<std::uint8_t> fb = load("default.fatbin");
  ASSERT_GT(fb.size(), 16u);
  const std::size_t real = fb.size();
  fb.resize(real + 100, 0xee);  // trailing bytes are not part of the image
  Result<DetectedImage> d = detect_image(Bytes(fb));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kFatbin);
  EXPECT_EQ(d->bytes.size(), real);
  EXPECT_EQ(d->bytes.data(), fb.data());
  Result<std::uint64_t> size = fatbin_size(Bytes(fb).first(16));
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, real);
}

TEST(Detect, WrapperBySpanReportsTheFatbinAddress) {
  std::vector<std::uint8_t> fb = load("default.fatbin");
  Wrapper w{static_cast<int>(kFatbinWrapperMagic), 1,
            reinterpret_cast<const unsigned long long*>(fb.data()), nullptr};
  Result<DetectedImage> d = detect_image(Bytes(reinterpret_cast<const std::uint8_t*>(&w), sizeof w));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kFatbinWrapper);
  EXPECT_EQ(d->wrapped, reinterpret_cast<std::uintptr_t>(fb.data()));
  EXPECT_EQ(d->bytes.size(), sizeof w);
}

TEST(Detect, WrapperByPointerIsFollowedToItsFatbin) {
  std::vector<std::uint8_t> fb = load("multi.fatbin");
  const std::size_t real = fb.size();
  fb.resize(real + 64, 0);
  Wrapper w{static_cast<int>(kFatbinWrapperMagic), 1,
            reinterpret_cast<const unsigned long long*>(fb.data()), nullptr};
  Result<DetectedImage> d = image_from_pointer(&w);
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kFatbin);
  EXPECT_EQ(d->bytes.data(), fb.data());
  EXPECT_EQ(d->bytes.size(), real);
}

TEST(Detect, WrapperErrors) {
  std::vector<std::uint8_t> junk(64, 0x11);
  Wrapper w{static_cast<int>(kFatbinWrapperMagic), 1,
            reinterpret_cast<const unsigned long long*>(junk.data()), nullptr};
  Result<DetectedImage> d = image_from_pointer(&w);
  ASSERT_FALSE(d);
  EXPECT_NE(d.status().message().find("magic"), std::string::npos) << d.status().message();

  w.data = nullptr;
  EXPECT_FALSE(image_from_pointer(&w));
  w.version = 7;
  w.data = reinterpret_cast<const unsigned long long*>(junk.data());
  EXPECT_EQ(image_from_pointer(&w).status().kind(), ErrorKind::kUnimplemented);
  // A wrapper cut short.
  EXPECT_FALSE(detect_image(Bytes(reinterpret_cast<const std::uint8_t*>(&w), 12)));
}

TEST(Detect, FatbinByPointer) {
  std::vector<std::uint8_t> fb = load("debug.fatbin");
  Result<DetectedImage> d = image_from_pointer(fb.data());
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kFatbin);
  EXPECT_EQ(d->bytes.size(), fb.size());
}

TEST(Detect, CubinBySpanAndPointerHaveTheFileSize) {
  std::vector<std::uint8_t> elf = load("kernels_sm80.cubin");
  Result<DetectedImage> d = detect_image(Bytes(elf));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kElf);
  EXPECT_EQ(d->bytes.size(), elf.size());
  Result<DetectedImage> p = image_from_pointer(elf.data());
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->kind, ImageKind::kElf);
  EXPECT_EQ(p->bytes.size(), elf.size());
}

TEST(Detect, PtxText) {
  std::vector<std::uint8_t> ptx = load("kernels_sm80.ptx");
  const std::size_t len = ptx.size();
  ptx.push_back(0);
  ptx.push_back('x');  // after the NUL: not part of the image
  Result<DetectedImage> d = detect_image(Bytes(ptx));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->kind, ImageKind::kPtx);
  EXPECT_EQ(d->bytes.size(), len);
  Result<DetectedImage> p = image_from_pointer(ptx.data());
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->kind, ImageKind::kPtx);
  EXPECT_EQ(p->bytes.size(), len);
}

TEST(Detect, UnknownFormatsAreErrors) {
  const char* binary = "\x01\x02\x03\x04garbage";
  EXPECT_FALSE(detect_image(Bytes(reinterpret_cast<const std::uint8_t*>(binary), 11)));
  EXPECT_FALSE(image_from_pointer(binary));
  const char* prose = "hello, this is not ptx";
  Result<DetectedImage> d = image_from_pointer(prose);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().kind(), ErrorKind::kInvalidArgument);
  EXPECT_FALSE(detect_image(Bytes()));
  // Short strings are read only up to their NUL (ASan checks the bounds).
  for (const char* s : {"", "a", ".v"}) {
    std::vector<char> exact(s, s + std::strlen(s) + 1);
    EXPECT_FALSE(image_from_pointer(exact.data())) << s;
  }
  EXPECT_FALSE(image_from_pointer(nullptr));
  // PTX by pointer without a NUL within the size limit.
  std::string unterminated = ".version 9.0 ";
  Limits small;
  small.max_image_size = 8;
  EXPECT_FALSE(image_from_pointer(unterminated.c_str(), small));
}

TEST(Detect, KindNames) {
  EXPECT_STREQ(image_kind_name(ImageKind::kFatbin), "fatbin");
  EXPECT_STREQ(image_kind_name(ImageKind::kFatbinWrapper), "fatbin-wrapper");
  EXPECT_STREQ(image_kind_name(ImageKind::kElf), "elf");
  EXPECT_STREQ(image_kind_name(ImageKind::kPtx), "ptx");
}

}  // namespace
}  // namespace rgpu::fatbin
