// Pointer walking over Cap'n Proto's flat-array encoding (see the encoding
// spec: a pointer's low two bits give its kind; struct pointers carry data
// and pointer section sizes, list pointers an element size and count).
#include "wire_edit.h"

#include <capnp/serialize.h>

#include <cstring>

namespace rgpu::security {
namespace {

uint64_t word_at(const std::vector<std::byte>& m, size_t index) {
  uint64_t w;
  std::memcpy(&w, m.data() + index * 8, 8);
  return w;
}

// Walks the pointer at `index` (in words from the start of the array), with
// `first` and `end` the segment's bounds; bounded in depth and range.
void walk(const std::vector<std::byte>& m, size_t first, size_t end, size_t index, int depth,
          std::vector<size_t>* out) {
  if (depth > 16 || index < first || index >= end) return;
  const uint64_t w = word_at(m, index);
  if (w == 0) return;
  out->push_back(index);
  const int64_t offset = static_cast<int32_t>(static_cast<uint32_t>(w)) >> 2;
  const int64_t target = static_cast<int64_t>(index) + 1 + offset;
  if (target < static_cast<int64_t>(first) || target > static_cast<int64_t>(end)) return;
  const size_t t = static_cast<size_t>(target);
  switch (w & 3) {
    case 0: {  // struct: data words, then pointers
      const size_t data = (w >> 32) & 0xffff, pointers = w >> 48;
      for (size_t i = 0; i < pointers; ++i) walk(m, first, end, t + data + i, depth + 1, out);
      break;
    }
    case 1: {  // list
      const unsigned element = (w >> 32) & 7;
      const size_t count = w >> 35;
      if (element == 6) {
        for (size_t i = 0; i < count; ++i) walk(m, first, end, t + i, depth + 1, out);
      } else if (element == 7 && t < end) {  // composite: a tag word, then the structs
        const uint64_t tag = word_at(m, t);
        const size_t n = static_cast<uint32_t>(tag) >> 2;
        const size_t data = (tag >> 32) & 0xffff, pointers = tag >> 48;
        for (size_t e = 0; e < n && e < 4096; ++e) {
          const size_t base = t + 1 + e * (data + pointers);
          for (size_t i = 0; i < pointers; ++i) walk(m, first, end, base + data + i, depth + 1, out);
        }
      }
      break;
    }
    default:  // far and capability pointers do not occur in one built segment
      break;
  }
}

}  // namespace

std::vector<size_t> pointer_words(const std::vector<std::byte>& message) {
  std::vector<size_t> out;
  if (message.size() < 16 || message.size() % 8 != 0) return out;
  uint32_t segments_minus_one, size0;
  std::memcpy(&segments_minus_one, message.data(), 4);
  std::memcpy(&size0, message.data() + 4, 4);
  if (segments_minus_one != 0 || 1 + static_cast<size_t>(size0) > message.size() / 8) return out;
  walk(message, 1, 1 + size0, 1, 0, &out);  // the root pointer is the segment's first word
  return out;
}

std::vector<std::byte> with_pointer_kind(const std::vector<std::byte>& message, size_t word, unsigned kind) {
  std::vector<std::byte> out = message;
  if ((word + 1) * 8 > out.size()) return out;
  const uint64_t edited = (word_at(message, word) & ~uint64_t{3}) | (kind & 3);
  std::memcpy(out.data() + word * 8, &edited, 8);
  return out;
}

std::vector<Edited> pointer_kind_sweep(const std::vector<std::byte>& message) {
  static const char* const kKinds[] = {"struct", "list", "far", "other"};
  std::vector<Edited> out;
  for (size_t index : pointer_words(message)) {
    const uint64_t w = word_at(message, index);
    for (uint64_t kind = 0; kind < 4; ++kind) {
      if (kind == (w & 3)) continue;
      out.push_back(Edited{with_pointer_kind(message, index, static_cast<unsigned>(kind)),
                           "pointer at word " + std::to_string(index) + " from " + kKinds[w & 3] + " to " +
                               kKinds[kind]});
    }
  }
  return out;
}

std::vector<std::byte> strip_terminator(const std::vector<std::byte>& message, std::string_view text) {
  std::string needle(text);
  needle.push_back('\0');
  const std::string_view hay(reinterpret_cast<const char*>(message.data()), message.size());
  const size_t at = hay.find(needle);
  if (at == std::string_view::npos || hay.find(needle, at + 1) != std::string_view::npos) return {};
  std::vector<std::byte> out = message;
  out[at + text.size()] = std::byte{'X'};
  return out;
}

std::vector<std::byte> to_bytes(capnp::MessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return {reinterpret_cast<const std::byte*>(bytes.begin()), reinterpret_cast<const std::byte*>(bytes.end())};
}

}  // namespace rgpu::security
