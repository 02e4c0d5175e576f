// parse_size and parse_request: what RGPU_REQUEST and --session-memory accept,
// and the errors for what they do not.
#include <gtest/gtest.h>

#include "rgpu/common/request_text.h"

namespace rgpu {
namespace {

TEST(ParseSize, BytesAndBinaryUnits) {
  EXPECT_EQ(parse_size("0").value(), 0u);
  EXPECT_EQ(parse_size("4096").value(), 4096u);
  EXPECT_EQ(parse_size("4096B").value(), 4096u);
  EXPECT_EQ(parse_size("1k").value(), 1024u);
  EXPECT_EQ(parse_size("512M").value(), 512ull << 20);
  EXPECT_EQ(parse_size("512MiB").value(), 512ull << 20);
  EXPECT_EQ(parse_size("2G").value(), 2ull << 30);
  EXPECT_EQ(parse_size("2gb").value(), 2ull << 30);
  EXPECT_EQ(parse_size("3T").value(), 3ull << 40);
  EXPECT_EQ(parse_size("18446744073709551615").value(), UINT64_MAX);
}

TEST(ParseSize, BadTextIsAnErrorThatQuotesIt) {
  for (const char* bad : {"", "M", "-1", "1.5G", "12X", "1 G", "1GG", "1Bi", "0x10", "18446744073709551616",
                          "16777216T"}) {
    auto r = parse_size(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().kind(), ErrorKind::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos) << r.status().message();
  }
}

TEST(ParseRequest, DevicesAndMemory) {
  auto r = parse_request("devices=2,mem=4G");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value().devices, 2u);
  EXPECT_EQ(r.value().memory_bytes, 4ull << 30);
  r = parse_request("mem=512M");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().devices, 0u) << "not asked for";
  EXPECT_EQ(r.value().memory_bytes, 512ull << 20);
  r = parse_request("devices=1");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value().devices, 1u);
  EXPECT_EQ(r.value().memory_bytes, 0u);
}

TEST(ParseRequest, Share) {
  auto r = parse_request("devices=2,mem=1G,share=0.25");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value().devices, 2u);
  EXPECT_FLOAT_EQ(r.value().share, 0.25f);
  r = parse_request("share=1");
  ASSERT_TRUE(r.is_ok());
  EXPECT_FLOAT_EQ(r.value().share, 1.0f);
  r = parse_request("share=.5");
  ASSERT_TRUE(r.is_ok());
  EXPECT_FLOAT_EQ(r.value().share, 0.5f);
  EXPECT_EQ(parse_request("devices=1").value().share, 0.0f) << "not asked for";
}

TEST(ParseRequest, BadItemsAreNamed) {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"", "is not KEY=VALUE"},
      {"devices=1,", "is not KEY=VALUE"},
      {"devices", "is not KEY=VALUE"},
      {"=3", "is not KEY=VALUE"},
      {"mem=", "is not KEY=VALUE"},
      {"devices=0", "devices wants a whole number from 1"},
      {"devices=two", "devices wants a whole number from 1"},
      {"devices=4294967296", "devices wants a whole number from 1"},
      {"mem=0", "mem must be above 0"},
      {"mem=lots", "'lots' is not a size"},
      {"share=0", "is not a share"},
      {"share=1.5", "is not a share"},
      {"share=-0.5", "is not a share"},
      {"share=1e-1", "is not a share"},
      {"share=nan", "is not a share"},
      {"share=.", "is not a share"},
      {"share=0.5,share=0.5", "share= twice"},
      {"speed=1", "unknown key 'speed'"},
      {"devices=1,devices=2", "devices= twice"},
      {"mem=1G,mem=2G", "mem= twice"},
      {"Mem=1G", "unknown key 'Mem'"},
  };
  for (const Case& c : cases) {
    auto r = parse_request(c.text);
    ASSERT_FALSE(r.is_ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << c.text << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace rgpu
