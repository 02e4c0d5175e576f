// CUDA_VISIBLE_DEVICES parsing (client-shim/src/visible_devices.h) against
// a table of four devices whose UUIDs differ from the second byte on.
#include "visible_devices.h"

#include <gtest/gtest.h>

#include <vector>

namespace rgpu::shim {
namespace {

std::vector<CUuuid> four_devices() {
  std::vector<CUuuid> uuids(4);
  for (int i = 0; i < 4; ++i) {
    for (int b = 0; b < 16; ++b) uuids[i].bytes[b] = static_cast<char>(0xa0 + b);
    uuids[i].bytes[1] = static_cast<char>(0x10 * (i + 1));  // 10, 20, 30, 40
  }
  uuids[3].bytes[1] = 0x31;  // device 3 shares the prefix "GPU-a03" with device 2
  return uuids;
}

TEST(VisibleDevices, UuidTextIsNvmls) {
  EXPECT_EQ(uuid_text(four_devices()[0]), "GPU-a010a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

TEST(VisibleDevices, IndicesInTheGivenOrder) {
  const auto u = four_devices();
  EXPECT_EQ(select_visible("2,0", u), (std::vector<int>{2, 0}));
  EXPECT_EQ(select_visible(" 3 , 1 ", u), (std::vector<int>{3, 1}));
  EXPECT_EQ(select_visible("0,1,2,3", u), (std::vector<int>{0, 1, 2, 3}));
}

TEST(VisibleDevices, EmptySelectsNothing) {
  const auto u = four_devices();
  EXPECT_TRUE(select_visible("", u).empty());
  EXPECT_TRUE(select_visible("  ", u).empty());
}

TEST(VisibleDevices, TheFirstInvalidEntryEndsTheList) {
  const auto u = four_devices();
  EXPECT_EQ(select_visible("1,4,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("1,-1,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("1,x,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("1,,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("1,1,0", u), (std::vector<int>{1}));  // a repeat
  EXPECT_TRUE(select_visible("7,0", u).empty());
  EXPECT_TRUE(select_visible("99999999999,0", u).empty());
}

TEST(VisibleDevices, UuidsAndUnambiguousPrefixes) {
  const auto u = four_devices();
  EXPECT_EQ(select_visible("GPU-a020a2a3-a4a5-a6a7-a8a9-aaabacadaeaf,0", u), (std::vector<int>{1, 0}));
  EXPECT_EQ(select_visible("gpu-A031,GPU-a01", u), (std::vector<int>{3, 0}));  // case ignored
  EXPECT_EQ(select_visible("GPU-a031", u), (std::vector<int>{3}));
  EXPECT_EQ(select_visible("1,GPU-a03,0", u), (std::vector<int>{1}));  // ambiguous: 2 or 3
  EXPECT_EQ(select_visible("1,GPU-,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("1,GPU-ffff,0", u), (std::vector<int>{1}));
  EXPECT_EQ(select_visible("a020a2a3", u), (std::vector<int>{}));  // "GPU-" is required
}

}  // namespace
}  // namespace rgpu::shim
