// toml++ (Debian's libtomlplusplus-dev) as rgpu's configuration files read
// it: include this instead of <toml++/toml.h>.
//
// toml++ 3.3 asserts conditions that malformed text can break (a table
// header such as "[@x]" reaches parse_key, found by tests/pool's fuzzer),
// and with NDEBUG under clang turns them into __builtin_assume; its parser
// then reports the error itself. A typo in a configuration file must be an
// error message, never an abort or undefined behaviour, so those checks are
// off: TOML_ASSERT_ASSUME falls back to TOML_ASSERT when NDEBUG is unset.
#pragma once

#include <string>
#include <string_view>

#pragma push_macro("NDEBUG")
#undef NDEBUG
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")

#include "rgpu/common/status.h"

namespace rgpu {

// toml++ 3.3 also reaches __builtin_unreachable on some non-ASCII characters
// where it looks for white space (U+00A1..U+049A, found by the fuzzer). Every
// setting rgpu reads is ASCII, so text with anything else is refused, with
// the line and column of the first such byte, before toml++ sees it.
inline Status check_toml_ascii(std::string_view text, const std::string& where) {
  size_t line = 1, column = 1;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return invalid_argument(where + ":" + std::to_string(line) + ":" + std::to_string(column) +
                              ": only ASCII text is accepted");
    }
    column = c == '\n' ? 1 : column + 1;
    line += c == '\n';
  }
  return Status::ok();
}

// Parses a configuration file's text (`where` names it in errors): ASCII
// checked first, then toml++'s parse, whose error becomes
// "where:line:column: what".
inline Result<toml::table> parse_toml(std::string_view text, const std::string& where) {
  if (Status ascii = check_toml_ascii(text, where); !ascii.is_ok()) return ascii;
  try {
    return toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return invalid_argument(where + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                            std::string(e.description()));
  }
}

}  // namespace rgpu
