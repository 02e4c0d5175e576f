// Edits of encoded wire messages for attacks: every pointer of a message
// given another kind (a list where a struct is expected and the reverse), and
// a text field stripped of its NUL terminator.
#pragma once

#include <capnp/message.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rgpu::security {

// One edited copy of a message, and what was done to it (for failure messages).
struct Edited {
  std::vector<std::byte> bytes;
  std::string what;
};

// The word offsets (from the start of the flat array) of every non-null
// pointer in a single-segment flat-array message, found by walking it from
// its root. Empty when the message is not one segment.
std::vector<size_t> pointer_words(const std::vector<std::byte>& message);

// A copy with the kind bits (0 struct, 1 list, 2 far, 3 other) of the
// pointer at word `word` set to `kind`.
std::vector<std::byte> with_pointer_kind(const std::vector<std::byte>& message, size_t word, unsigned kind);

// For every pointer word, a copy with its kind bits set to each of the three
// other kinds: a deterministic sweep.
std::vector<Edited> pointer_kind_sweep(const std::vector<std::byte>& message);

// A copy in which the NUL after the only occurrence of `text` (followed by
// its NUL) is replaced by 'X'; empty when `text` does not occur exactly once.
std::vector<std::byte> strip_terminator(const std::vector<std::byte>& message, std::string_view text);

// Builders whose messages the sweep edits start with a first segment this
// large, so that the message stays one segment.
constexpr unsigned kOneSegmentWords = 1u << 14;

// The flat-array bytes of a built message.
std::vector<std::byte> to_bytes(capnp::MessageBuilder& builder);

}  // namespace rgpu::security
