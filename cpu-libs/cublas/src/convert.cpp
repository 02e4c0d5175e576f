// Half and bfloat16 conversions written on the bit patterns, so results are
// the same whatever the compiler's support for _Float16 and __bf16.
#include "convert.h"

#include <cstring>

namespace rgpu::cpublas {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

size_t element_size(cudaDataType type) {
  switch (type) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    case CUDA_C_64F:
      return 16;
    default:
      return 0;
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13));  // inf, NaN (payload kept)
  if (exp == 0) {
    if (man == 0) return float_of(sign);
    // Subnormal: value is man * 2^-24, exactly representable in float.
    float v = float(man) * float_of(0x33800000u);  // 2^-24
    return sign ? -v : v;
  }
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_half(float f) {
  uint32_t u = bits_of(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((abs >> 13) & 0x3ff));  // NaN stays quiet NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): subnormal or zero. Adding 0.5
    // shifts the bits so that the float adder rounds to nearest even at 2^-24.
    float magic = float_of(0x3f000000u);  // 0.5
    float r = float_of(abs) + magic;
    return uint16_t(sign | (bits_of(r) - bits_of(magic)));
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even.
  uint32_t odd = (abs >> 13) & 1;
  abs += 0xc8000fffu + odd;  // (15 - 127) << 23, plus rounding
  return uint16_t(sign | (abs >> 13));
}

float bf16_to_float(uint16_t b) { return float_of(uint32_t(b) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

bool to_float(const void* src, cudaDataType type, size_t count, float* dst) {
  switch (type) {
    case CUDA_R_32F:
      std::memcpy(dst, src, count * sizeof(float));
      return true;
    case CUDA_R_16F: {
      auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = half_to_float(s[i]);
      return true;
    }
    case CUDA_R_16BF: {
      auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_float(s[i]);
      return true;
    }
    case CUDA_R_64F: {
      auto* s = static_cast<const double*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = float(s[i]);
      return true;
    }
    default:
      return false;
  }
}

bool from_float(const float* src, size_t count, cudaDataType type, void* dst) {
  switch (type) {
    case CUDA_R_32F:
      std::memcpy(dst, src, count * sizeof(float));
      return true;
    case CUDA_R_16F: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) d[i] = float_to_half(src[i]);
      return true;
    }
    case CUDA_R_16BF: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < count; ++i) d[i] = float_to_bf16(src[i]);
      return true;
    }
    case CUDA_R_64F: {
      auto* d = static_cast<double*>(dst);
      for (size_t i = 0; i < count; ++i) d[i] = src[i];
      return true;
    }
    default:
      return false;
  }
}

bool scalar_to_double(const void* src, cudaDataType type, double* out) {
  switch (type) {
    case CUDA_R_64F:
      std::memcpy(out, src, sizeof(double));
      return true;
    case CUDA_R_32F:
    case CUDA_R_16F:
    case CUDA_R_16BF: {
      float f;
      to_float(src, type, 1, &f);
      *out = f;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace rgpu::cpublas
