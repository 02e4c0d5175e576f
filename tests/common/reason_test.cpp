#include "rgpu/common/reason.h"

#include <gtest/gtest.h>

#include <string>

namespace rgpu {
namespace {

TEST(BoundedReason, KeepsPrintableText) {
  EXPECT_EQ(bounded_reason("unsupported instruction 'cp.async' at line 40"),
            "unsupported instruction 'cp.async' at line 40");
  EXPECT_EQ(bounded_reason(""), "");
}

TEST(BoundedReason, ReplacesControlAndHighBytes) {
  // A kernel name with an escape sequence and a newline cannot move the terminal.
  EXPECT_EQ(bounded_reason(std::string("k\x1b[2Jx\n\xff", 8)), "k?[2Jx??");
  EXPECT_EQ(bounded_reason(std::string("a\0b", 3)), "a?b");
}

TEST(BoundedReason, CutsLongTextAndSaysSo) {
  const std::string long_text(2000, 'x');
  const std::string out = bounded_reason(long_text);
  ASSERT_EQ(out.size(), kMaxReasonBytes);
  EXPECT_EQ(out.substr(out.size() - 3), "...");
  EXPECT_EQ(bounded_reason("abcdefgh", 6), "abc...");
  EXPECT_EQ(bounded_reason("abcdef", 6), "abcdef");
  EXPECT_EQ(bounded_reason("abcdefgh", 2), "..");
}

}  // namespace
}  // namespace rgpu
