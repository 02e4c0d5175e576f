// Slices: the --slices text, the checks against the devices, admission
// (best fit, distinct devices, refusals naming what is free, release), and
// the configuration file.
#include "slices.h"

#include <gtest/gtest.h>

#include "config_file.h"

namespace rgpu::server {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(ParseSlicing, DeviceAndSlices) {
  auto s = parse_slicing("1:512M@0.5,256M@0.25,256M@.25");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s.value().device, 1u);
  ASSERT_EQ(s.value().slices.size(), 3u);
  EXPECT_EQ(s.value().slices[0].memory_bytes, 512 * kMiB);
  EXPECT_FLOAT_EQ(s.value().slices[0].share, 0.5f);
  EXPECT_FLOAT_EQ(s.value().slices[2].share, 0.25f);
}

TEST(ParseSlicing, MalformedTextsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"512M@0.5", "DEV:SIZE@SHARE"},   {":512M@0.5", "DEV:SIZE@SHARE"},  {"x:512M@0.5", "not a device ordinal"},
      {"0:512M", "not SIZE@SHARE"},      {"0:", "not SIZE@SHARE"},          {"0:512M@0.5,", "not SIZE@SHARE"},
      {"0:lots@0.5", "'lots' is not a size"}, {"0:0@0.5", "needs memory"}, {"0:1G@2", "is not a share"},
      {"0:1G@0", "is not a share"},
  };
  for (const auto& [text, says] : cases) {
    auto s = parse_slicing(text);
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_NE(s.status().message().find(says), std::string::npos) << text << ": " << s.status().message();
  }
}

SharingOptions cut(std::initializer_list<const char*> texts, uint32_t max_sessions = 0) {
  SharingOptions o;
  for (const char* t : texts) o.slicing.push_back(parse_slicing(t).value());
  o.max_sessions_per_slice = max_sessions;
  return o;
}

TEST(SliceTable, CutsThatDoNotFitTheDeviceAreRefused) {
  const std::vector<uint64_t> devices = {1024 * kMiB, 1024 * kMiB};
  const std::pair<SharingOptions, const char*> cases[] = {
      {cut({"0:512M@0.5,600M@0.25"}), "need more memory than its 1024 MiB"},
      {cut({"1:256M@0.5,256M@0.5,256M@0.25"}), "add up to 1.25; at most 1"},
      {cut({"2:256M@0.5"}), "this server has 2 device(s)"},
      {cut({"0:256M@0.5", "0:256M@0.5"}), "cuts device 0 twice"},
  };
  for (const auto& [options, says] : cases) {
    auto t = SliceTable::make(devices, options);
    ASSERT_FALSE(t.is_ok()) << says;
    EXPECT_NE(t.status().message().find(says), std::string::npos) << t.status().message();
  }
  // Exactly the device, and shares of exactly 1 in decimals, are fine.
  EXPECT_TRUE(SliceTable::make(devices, cut({"0:512M@0.5,256M@0.25,256M@0.25", "1:1G@0.3"})).is_ok());
  EXPECT_TRUE(SliceTable::make(devices, cut({"0:100M@0.1,100M@0.2,100M@0.7"})).is_ok());
}

Resources request(uint32_t devices, uint64_t mem = 0, float share = 0) {
  Resources r;
  r.devices = devices;
  r.memory_bytes = mem;
  r.share = share;
  return r;
}

TEST(SliceTable, WithoutSlicesEverySessionGetsEveryDevice) {
  auto table = SliceTable::make({1024 * kMiB, 1024 * kMiB}, SharingOptions{}).value();
  EXPECT_FALSE(table->sliced());
  for (int i = 0; i < 3; ++i) {  // any number of sessions share them
    auto a = table->admit(request(0, 64 * kMiB));
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    ASSERT_EQ(a.value().first.size(), 2u);
    EXPECT_EQ(a.value().first[1].device, 1u);
    EXPECT_EQ(a.value().first[1].slice, -1);
    EXPECT_EQ(a.value().first[1].quota, 64 * kMiB);
  }
  auto one = table->admit(request(1));
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(one.value().first.size(), 1u);
  EXPECT_EQ(one.value().first[0].quota, 0u) << "no quota asked for, none set";
}

TEST(SliceTable, AdmitsBestFitOnDistinctDevicesAndRefusesWhenFull) {
  auto table = SliceTable::make({1024 * kMiB, 1024 * kMiB}, cut({"1:512M@0.5,256M@0.25,128M@0.25"})).value();
  ASSERT_TRUE(table->sliced());
  // Two devices: a slice of device 1 and device 0 (whole, shared).
  auto two = table->admit(request(2, 200 * kMiB));
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  ASSERT_EQ(two.value().first.size(), 2u);
  EXPECT_EQ(two.value().first[0].device, 0u);
  EXPECT_EQ(two.value().first[0].slice, -1);
  EXPECT_EQ(two.value().first[1].device, 1u);
  EXPECT_EQ(two.value().first[1].slice, 1) << "the smallest slice with 200M: 256M";
  EXPECT_EQ(two.value().first[1].quota, 256 * kMiB);
  // No request: one slice, the smallest free.
  auto small = table->admit(request(0));
  ASSERT_TRUE(small.is_ok());
  ASSERT_EQ(small.value().first.size(), 1u);
  EXPECT_EQ(small.value().first[0].quota, 128 * kMiB);
  EXPECT_FLOAT_EQ(small.value().first[0].share, 0.25f);
  // A share of 0.5 fits only the 512M slice.
  auto half = table->admit(request(1, 0, 0.5f));
  ASSERT_TRUE(half.is_ok());
  EXPECT_EQ(half.value().first[0].slice, 0);
  // Device 1 is full; more memory than device 0's whole is refused, naming what is free.
  auto big = table->admit(request(1, 2048 * kMiB));
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("asked for 1 device(s), mem=2048 MiB; free: device 0 (whole, 1024 MiB)"),
            std::string::npos)
      << big.status().message();
  // Two devices with a share of 0.3: only device 0 (whole) is left with that much.
  auto shares = table->admit(request(2, 0, 0.3f));
  ASSERT_FALSE(shares.is_ok());
  EXPECT_NE(shares.status().message().find("asked for 2 device(s), share=0.3; free: device 0 (whole"),
            std::string::npos)
      << shares.status().message();
  // Ending a session frees its slice.
  half.value().second.reset();
  auto again = table->admit(request(1, 0, 0.5f));
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again.value().first[0].slice, 0);
}

TEST(SliceTable, MaxSessionsPerSlice) {
  auto table = SliceTable::make({1024 * kMiB}, cut({"0:512M@0.5,512M@0.5"}, 2)).value();
  std::vector<std::unique_ptr<Admission>> held;
  for (int i = 0; i < 4; ++i) {
    auto a = table->admit(request(0));
    ASSERT_TRUE(a.is_ok()) << i << ": " << a.status().to_string();
    held.push_back(std::move(a.value().second));
  }
  auto fifth = table->admit(request(0));
  ASSERT_FALSE(fifth.is_ok());
  EXPECT_NE(fifth.status().message().find("free: nothing"), std::string::npos) << fifth.status().message();
  for (const auto& s : table->slots()) EXPECT_EQ(s.sessions, 2u);
  held.clear();
  for (const auto& s : table->slots()) EXPECT_EQ(s.sessions, 0u);
}

TEST(ConfigFile, SlicesAndLimits) {
  auto c = parse_config(R"(
device = "cpu"
cpu-devices = 2
session-memory = "256M"
max-sessions-per-slice = 2
slices = ["0:512M@0.5,256M@0.5"]

[[cut]]
device = 1
slices = [{ memory = "512M", share = 0.5 }, { memory = 268435456, share = 0.25 }]
)",
                        "test.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(*c.value().device, "cpu");
  EXPECT_EQ(*c.value().cpu_devices, 2u);
  EXPECT_EQ(*c.value().session_memory, 256 * kMiB);
  EXPECT_EQ(*c.value().max_sessions_per_slice, 2u);
  ASSERT_EQ(c.value().slices.size(), 2u);
  // [[cut]] tables and the slices list, in either order.
  const std::string& text = c.value().slices[0][0] == '1' ? c.value().slices[0] : c.value().slices[1];
  auto second = parse_slicing(text);
  ASSERT_TRUE(second.is_ok()) << text << ": " << second.status().to_string();
  EXPECT_EQ(second.value().device, 1u);
  ASSERT_EQ(second.value().slices.size(), 2u);
  EXPECT_EQ(second.value().slices[1].memory_bytes, 256 * kMiB);
  EXPECT_FLOAT_EQ(second.value().slices[1].share, 0.25f);
}

TEST(ConfigFile, ErrorsNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"devise = \"cpu\"", "unknown key 'devise'"},
      {"cpu-devices = \"two\"", "cpu-devices wants a whole number"},
      {"session-memory = \"lots\"", "'lots' is not a size"},
      {"slices = \"0:1G@1\"", "slices wants a list"},
      {"[[cut]]\nslices = [{ memory = \"1G\", share = 1.0 }]", "needs device = N"},
      {"[[cut]]\ndevice = 0\nslices = [{ memory = \"1G\" }]", "needs memory and share"},
      {"[[cut]]\ndevice = 0\nslices = [{ memory = \"1G\", share = 1.0, speed = 2 }]", "unknown slice key 'speed'"},
      {"device = ", "test.toml:1"},
      // Text that trips toml++'s own checks is an error, never an abort.
      {"[@x]", "test.toml:1"},
      {"device = \"cpu\"\n\xc2\xa1 = 1", "test.toml:2:1: only ASCII text is accepted"},
  };
  for (const auto& [text, says] : cases) {
    auto c = parse_config(text, "test.toml");
    ASSERT_FALSE(c.is_ok()) << text;
    EXPECT_NE(c.status().message().find(says), std::string::npos) << text << ": " << c.status().message();
  }
}

TEST(ConfigFile, MetricsAddress) {
  auto c = parse_config("metrics = \"127.0.0.1:9400\"\n", "test.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(*c.value().metrics, "127.0.0.1:9400");
  auto bad = parse_config("metrics = 9400\n", "test.toml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("metrics wants"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace rgpu::server
