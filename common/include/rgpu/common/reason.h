// The reason of a refusal or fault as it travels from rgpud to the client's
// terminal: bounded in size and in printable characters only, so that text
// a server quotes from a client's own module (a kernel's name, an
// instruction) can neither flood a reply nor move the client's terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rgpu {

// The most bytes of a reason on the wire and on the terminal.
inline constexpr std::size_t kMaxReasonBytes = 512;

// `text` with every byte outside printable ASCII (0x20..0x7e) replaced by
// '?', cut to at most `max` bytes (the cut marked by a trailing "...").
std::string bounded_reason(std::string_view text, std::size_t max = kMaxReasonBytes);

}  // namespace rgpu
