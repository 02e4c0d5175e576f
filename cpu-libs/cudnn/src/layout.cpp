// Strided tensors to and from dense float32 (layout.h).
#include "layout.h"

#include <cstring>

namespace rgpu::cpudnn {

namespace {

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; mant <<= 1; } while (!(mant & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = uint32_t(exp) << 10 | mant >> 13, rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: still right
  return uint16_t(sign | h);
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

double load(int32_t dtype, const char* p) {
  switch (dtype) {
    case 0: { float v; std::memcpy(&v, p, 4); return v; }
    case 1: { double v; std::memcpy(&v, p, 8); return v; }
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    default: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
  }
}

void store(int32_t dtype, char* p, double v) {
  switch (dtype) {
    case 0: { float f = float(v); std::memcpy(p, &f, 4); break; }
    case 1: std::memcpy(p, &v, 8); break;
    case 2: { uint16_t h = float_to_half(float(v)); std::memcpy(p, &h, 2); break; }
    default: { uint16_t h = float_to_bf16(float(v)); std::memcpy(p, &h, 2); break; }
  }
}

size_t elem_bytes(int32_t dtype) { return dtype == 0 ? 4 : dtype == 1 ? 8 : 2; }

// Calls f(dense index, byte offset) for every element, in dense order.
template <class F>
void walk(const Strided& t, F&& f) {
  const size_t n = t.count();
  if (n == 0) return;
  const size_t eb = elem_bytes(t.dtype);
  int64_t idx[8] = {};
  int64_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    f(i, size_t(off) * eb);
    for (int d = t.nd - 1; d >= 0; --d) {
      if (++idx[d] < t.dims[d]) {
        off += t.strides[d];
        break;
      }
      off -= t.strides[d] * (t.dims[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

size_t Strided::count() const {
  size_t n = 1;
  for (int i = 0; i < nd; ++i) n *= size_t(dims[i]);
  return nd == 0 ? 0 : n;
}

bool supported_dtype(int32_t dtype) { return dtype == 0 || dtype == 1 || dtype == 2 || dtype == 9; }

bool dense_f32(const Strided& t) {
  if (t.dtype != 0 || t.nd == 0) return false;
  int64_t expect = 1;
  for (int d = t.nd - 1; d >= 0; --d) {
    if (t.dims[d] != 1 && t.strides[d] != expect) return false;  // a dim of 1 may have any stride
    expect *= t.dims[d];
  }
  return true;
}

void gather(const Strided& t, const void* base, float* out) {
  const char* b = static_cast<const char*>(base);
  if (dense_f32(t)) {
    std::memcpy(out, b, t.count() * 4);
    return;
  }
  if (t.dtype == 0) {
    walk(t, [&](size_t i, size_t off) { std::memcpy(&out[i], b + off, 4); });
    return;
  }
  walk(t, [&](size_t i, size_t off) { out[i] = float(load(t.dtype, b + off)); });
}

void scatter(const Strided& t, const float* in, void* base, double alpha, double beta) {
  char* b = static_cast<char*>(base);
  if (alpha == 1.0 && beta == 0.0 && dense_f32(t)) {
    std::memcpy(b, in, t.count() * 4);
    return;
  }
  if (t.dtype == 0 && alpha == 1.0 && beta == 0.0) {
    walk(t, [&](size_t i, size_t off) { std::memcpy(b + off, &in[i], 4); });
    return;
  }
  walk(t, [&](size_t i, size_t off) {
    double v = alpha * in[i];
    if (beta != 0.0) v += beta * load(t.dtype, b + off);
    store(t.dtype, b + off, v);
  });
}

DenseF32::DenseF32(const Strided& t, void* base, Use use, double alpha, double beta, bool in_place)
    : t_(t), base_(base), alpha_(alpha), beta_(beta), count_(t.count()) {
  in_place = in_place && dense_f32(t) && (use == kInput || (alpha == 1.0 && beta == 0.0));
  if (in_place) {
    data_ = static_cast<float*>(base);  // a job's host copy is 8-byte aligned
    base_ = nullptr;                    // nothing to store
    return;
  }
  copy_.resize(count_);
  if (use == kInput) gather(t, base, copy_.data());
  data_ = copy_.data();
  if (use == kInput) base_ = nullptr;
}

void DenseF32::store() {
  if (base_) scatter(t_, data_, base_, alpha_, beta_);
}

}  // namespace rgpu::cpudnn
