// Reasons bounded for the wire and the terminal.
#include "rgpu/common/reason.h"

namespace rgpu {

std::string bounded_reason(std::string_view text, std::size_t max) {
  static constexpr std::string_view kCut = "...";
  const bool cut = text.size() > max;
  const std::size_t keep = cut ? (max > kCut.size() ? max - kCut.size() : 0) : text.size();
  std::string out;
  out.reserve(cut ? max : keep);
  for (std::size_t i = 0; i < keep; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out.push_back(c >= 0x20 && c <= 0x7e ? static_cast<char>(c) : '?');
  }
  if (cut) out.append(kCut.substr(0, max - out.size()));
  return out;
}

}  // namespace rgpu
