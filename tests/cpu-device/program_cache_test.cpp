// ProgramCache: one parse per image, kept within its byte budget.
#include <gtest/gtest.h>

#include <string>

#include "program_cache.h"

namespace rgpu::cpudev {
namespace {

const char* kPtx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n";

fatbin::ContentHash key(const std::string& s) {
  return fatbin::content_hash(fatbin::Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

TEST(ProgramCache, ParsesAnImageOnce) {
  ProgramCache cache(1 << 20);
  int made = 0;
  auto make = [&](uint64_t* bytes) -> Result<std::shared_ptr<const ptx::Program>> {
    ++made;
    *bytes = std::string(kPtx).size();
    auto p = ptx::Program::parse(kPtx, ptx::Decode::kOnUse);
    if (!p.is_ok()) return p.status();
    return std::shared_ptr<const ptx::Program>(std::move(p.value()));
  };
  auto a = cache.get(key("image a"), make);
  auto b = cache.get(key("image a"), make);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(made, 1);
  EXPECT_EQ(a.value().get(), b.value().get());
  auto c = cache.get(key("image c"), make);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(made, 2);
  EXPECT_NE(a.value().get(), c.value().get());
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().programs, 2u);
}

TEST(ProgramCache, KeepsWithinItsBudgetAndNeverKeepsFailures) {
  const uint64_t size = std::string(kPtx).size();
  ProgramCache cache(2 * size);
  int made = 0;
  auto make = [&](uint64_t* bytes) -> Result<std::shared_ptr<const ptx::Program>> {
    ++made;
    *bytes = size;
    return std::shared_ptr<const ptx::Program>(std::move(ptx::Program::parse(kPtx).value()));
  };
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(cache.get(key(k), make).is_ok());
  EXPECT_EQ(cache.stats().programs, 2u);
  EXPECT_LE(cache.stats().bytes, 2 * size);
  ASSERT_TRUE(cache.get(key("a"), make).is_ok());  // the oldest went first
  EXPECT_EQ(made, 4);
  ASSERT_TRUE(cache.get(key("c"), make).is_ok());
  EXPECT_EQ(made, 4);

  int failed = 0;
  auto fail = [&](uint64_t*) -> Result<std::shared_ptr<const ptx::Program>> {
    ++failed;
    return invalid_argument("bad ptx");
  };
  EXPECT_FALSE(cache.get(key("bad"), fail).is_ok());
  EXPECT_FALSE(cache.get(key("bad"), fail).is_ok());
  EXPECT_EQ(failed, 2);
}

}  // namespace
}  // namespace rgpu::cpudev
