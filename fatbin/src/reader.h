// Private: bounds-checked little-endian reads over untrusted bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin::detail {

// True when [off, off + len) lies inside a buffer of `size` bytes, without
// overflowing.
inline bool in_bounds(std::uint64_t size, std::uint64_t off, std::uint64_t len) {
  return off <= size && len <= size - off;
}

// Reads an unsigned little-endian integer of type T at `off`; false if it
// does not fit. The host is little-endian (x86-64, aarch64), as is the data.
template <class T>
bool read_le(Bytes data, std::uint64_t off, T* out) {
  if (!in_bounds(data.size(), off, sizeof(T))) return false;
  std::memcpy(out, data.data() + off, sizeof(T));
  return true;
}

// Overflow-checked a + b; false on overflow.
inline bool add_u64(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace rgpu::fatbin::detail
