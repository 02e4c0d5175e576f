// Bit patterns of the float formats the matrix instructions read and write
// (f16, bf16, f32), for building operands and reading results in tests.
// Exact only for what the tests use: normal values (and zero) that f16 or
// bf16 holds without rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace rgpu::ptx::testing {

inline uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline uint16_t to_f16(float f) {
  const uint32_t b = bits(f);
  if (f == 0.0f) return static_cast<uint16_t>(b >> 16);
  const int e = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(((b >> 16) & 0x8000) | (e << 10) | ((b >> 13) & 0x3ff));
}

inline uint16_t to_bf16(float f) { return static_cast<uint16_t>(bits(f) >> 16); }

inline float from_f16(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0.0f;
  return from_bits((static_cast<uint32_t>(h & 0x8000) << 16) | ((((h >> 10) & 0x1f) - 15 + 127) << 23) |
                   (static_cast<uint32_t>(h & 0x3ff) << 13));
}

}  // namespace rgpu::ptx::testing
