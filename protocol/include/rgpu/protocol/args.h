// The packed arguments of a generated call (Call.invoke.args) and of its
// reply (Reply.bytes): a flat sequence of 8-byte little-endian items.
//
//   scalar   one item: integers sign- or zero-extended to 64 bits, a float
//            as its 32-bit pattern zero-extended, a double as its 64 bits
//   handle   one item: the full 64-bit typed handle (protocol/handles.h)
//   buffer   one item with the length n, then n bytes, zero-padded to a
//            multiple of 8
//
// The order is the parameter order of the function's description
// (docs/api-description.md). The reader is for untrusted bytes: every read
// is bounded, a failed read leaves the reader failed (so a row checks once,
// at the end), and nothing throws or reads past the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rgpu::protocol {

constexpr size_t kArgItem = 8;

constexpr uint64_t padded_arg_size(uint64_t n) { return (n + kArgItem - 1) / kArgItem * kArgItem; }

// Builds packed arguments. Not thread-safe; owns its bytes.
class ArgWriter {
 public:
  // Most calls pack a few items: one allocation, not one per growth step
  // (this is on every generated call's round trip).
  ArgWriter() { bytes_.reserve(128); }

  void u64(uint64_t v) {
    std::byte b[kArgItem];
    for (size_t i = 0; i < kArgItem; ++i) b[i] = static_cast<std::byte>(v >> (8 * i));
    bytes_.insert(bytes_.end(), b, b + kArgItem);
  }
  // Any integer or enum, sign- or zero-extended; floating point by its bits.
  template <class T>
  void scalar(T v) {
    if constexpr (std::is_same_v<T, float>) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      u64(bits);
    } else if constexpr (std::is_same_v<T, double>) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      u64(bits);
    } else if constexpr (std::is_enum_v<T>) {
      scalar(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_pointer_v<T>) {
      u64(reinterpret_cast<uintptr_t>(v));
    } else if constexpr (std::is_signed_v<T>) {
      u64(static_cast<uint64_t>(static_cast<int64_t>(v)));
    } else {
      u64(static_cast<uint64_t>(v));
    }
  }
  void buffer(const void* data, uint64_t n) {
    u64(n);
    const auto* p = static_cast<const std::byte*>(data);
    if (n > 0) bytes_.insert(bytes_.end(), p, p + n);
    bytes_.resize(bytes_.size() + (padded_arg_size(n) - n), std::byte{0});
  }
  void string(std::string_view s) { buffer(s.data(), s.size()); }

  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

// Reads packed arguments from bytes it does not own (they must outlive it
// and every view it hands out). Not thread-safe.
class ArgReader {
 public:
  explicit ArgReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  bool u64(uint64_t* v) {
    if (failed_ || bytes_.size() - at_ < kArgItem) return fail();
    uint64_t x = 0;
    for (size_t i = 0; i < kArgItem; ++i) x |= static_cast<uint64_t>(bytes_[at_ + i]) << (8 * i);
    at_ += kArgItem;
    *v = x;
    return true;
  }
  // The inverse of ArgWriter::scalar; fails when the item does not fit T
  // (an int that is not the sign extension of a 32-bit value, a float item
  // with high bits set), so that no value is silently truncated. An enum is
  // read as its underlying type and checked against its values by the
  // caller: a C enum holding a value outside its range is undefined.
  template <class T>
  bool scalar(T* out) {
    static_assert(!std::is_enum_v<T>, "read the underlying type, check it, then convert");
    uint64_t raw;
    if (!u64(&raw)) return false;
    if constexpr (std::is_same_v<T, float>) {
      if (raw >> 32) return fail();
      uint32_t bits = static_cast<uint32_t>(raw);
      std::memcpy(out, &bits, sizeof bits);
    } else if constexpr (std::is_same_v<T, double>) {
      std::memcpy(out, &raw, sizeof raw);
    } else if constexpr (std::is_pointer_v<T>) {
      *out = reinterpret_cast<T>(static_cast<uintptr_t>(raw));
    } else {
      if (!fits(raw, out)) return fail();
    }
    return true;
  }
  // A buffer of at most `limit` bytes, as a view into the input.
  bool buffer(std::span<const std::byte>* out, uint64_t limit) {
    uint64_t n;
    if (!u64(&n)) return false;
    if (n > limit || n > bytes_.size() - at_ || padded_arg_size(n) > bytes_.size() - at_) return fail();
    *out = bytes_.subspan(at_, n);
    for (uint64_t i = n; i < padded_arg_size(n); ++i) {
      if (bytes_[at_ + i] != std::byte{0}) return fail();  // one encoding per value
    }
    at_ += padded_arg_size(n);
    return true;
  }
  bool string(std::string_view* out, uint64_t limit) {
    std::span<const std::byte> b;
    if (!buffer(&b, limit)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
    return true;
  }

  // True when every read so far succeeded and the input is used up exactly.
  bool finish() const { return !failed_ && at_ == bytes_.size(); }
  bool failed() const { return failed_; }
  // Leaves the reader failed: a caller's own check of what it read refused
  // it (a value outside what its type allows). Always false.
  bool reject() { return fail(); }

 private:
  template <class T>
  static bool fits(uint64_t raw, T* out) {
    static_assert(std::is_integral_v<T>);
    if constexpr (std::is_same_v<T, bool>) {
      if (raw > 1) return false;
      *out = raw != 0;
    } else if constexpr (std::is_signed_v<T>) {
      auto v = static_cast<int64_t>(raw);
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
      *out = static_cast<T>(v);
    } else {
      if (raw > std::numeric_limits<T>::max()) return false;
      *out = static_cast<T>(raw);
    }
    return true;
  }
  bool fail() {
    failed_ = true;
    return false;
  }

  std::span<const std::byte> bytes_;
  size_t at_ = 0;
  bool failed_ = false;
};

}  // namespace rgpu::protocol
