// Host reference computations for the kernel corpus in tests/kernels/*.cu.
// Plain C++ (no CUDA), so any test program can check a kernel's output.
// Each function computes what the kernel of the same name writes, for the
// whole launch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace rgpu::testkernels {

inline void vec_add(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

inline void saxpy(float alpha, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}

// b must have no zeros (and no INT_MIN / -1 pairs).
inline void int_ops(const int* a, const int* b, int* out, int n) {
  for (int i = 0; i < n; ++i) {
    int x = a[i], y = b[i];
    unsigned ux = static_cast<unsigned>(x), uy = static_cast<unsigned>(y);
    int* o = out + 8 * i;
    o[0] = x / y;
    o[1] = x % y;
    o[2] = static_cast<int>(ux / uy);
    o[3] = static_cast<int>(ux % uy);
    o[4] = std::min(x, y) * 3 - std::max(x, y);
    o[5] = std::abs(x) ^ static_cast<int>(static_cast<unsigned>(y) << 3);
    o[6] = (x >> 2) + static_cast<int>(ux >> 5);
    o[7] = static_cast<int>(static_cast<long long>(x) * y >> 7);
  }
}

inline void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float acc = 0.f;
      for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
      C[r * N + c] = acc;
    }
}

// One partial sum per block of 2*block elements.
inline void reduce_shared(const float* in, float* partial, int n, int block) {
  int blocks = (n + 2 * block - 1) / (2 * block);
  for (int b = 0; b < blocks; ++b) {
    double s = 0;
    for (int i = b * 2 * block; i < std::min(n, (b + 1) * 2 * block); ++i) s += in[i];
    partial[b] = static_cast<float>(s);
  }
}

inline int reduce_sum(const int* in, int n) {
  long long s = 0;
  for (int i = 0; i < n; ++i) s += in[i];
  return static_cast<int>(s);
}

inline void scan_inclusive(const int* in, int* out, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) out[i] = s += in[i];
}

inline void scan_exclusive(const int* in, int* out, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) {
    out[i] = s;
    s += in[i];
  }
}

inline void histogram(const unsigned char* in, unsigned* bins, int n) {
  for (int i = 0; i < 256; ++i) bins[i] = 0;
  for (int i = 0; i < n; ++i) ++bins[in[i]];
}

inline void transpose(const float* in, float* out, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}

inline void stencil_1d(const float* in, float* out, int n) {
  for (int g = 0; g < n; ++g) {
    float r = 0.f;
    for (int o = -3; o <= 3; ++o) {
      float v = (g + o >= 0 && g + o < n) ? in[g + o] : 0.f;
      r += v * (1.0f + 0.25f * o);
    }
    out[g] = r;
  }
}

inline void f64_math(const double* in, double* out, int n) {
  for (int i = 0; i < n; ++i) {
    double x = in[i];
    double* o = out + 6 * i;
    o[0] = x * x - 3.0 * x + 1.5;
    o[1] = 1.0 / (x + 4.0);
    o[2] = std::sqrt(x + 5.0);
    o[3] = std::exp(x * 0.5);
    o[4] = std::log(x + 6.0) + std::sin(x);
    o[5] = std::fma(x, 2.5, -x / 7.0);
  }
}

// Half precision as raw binary16 bits, computed through float.
inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
  return sign ? -v : v;
}
inline uint16_t float_to_half(float f) {
  if (std::isnan(f)) return 0x7fff;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.f) return sign | 0x7c00;
  if (a < std::ldexp(1.f, -14)) {  // subnormal: units of 2^-24
    float m = std::nearbyint(a * std::ldexp(1.f, 24));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  int e;
  float fr = std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
  float m = std::nearbyint(fr * 2048.f);  // 11 significant bits
  if (m >= 2048.f) m /= 2, ++e;
  return static_cast<uint16_t>(sign | ((e + 14) << 10) | (static_cast<uint32_t>(m) & 0x3ffu));
}

inline void f16_math(const uint16_t* a, const uint16_t* b, uint16_t* out, float* outf, int n) {
  for (int i = 0; i < n; ++i) {
    float x = half_to_float(a[i]), y = half_to_float(b[i]);
    out[3 * i + 0] = float_to_half(x + y);
    out[3 * i + 1] = float_to_half(x * y);
    out[3 * i + 2] = float_to_half(static_cast<float>(static_cast<double>(x) * y + 0.5));
    float xx = half_to_float(float_to_half(x * x)), yy = half_to_float(float_to_half(y * y));
    outf[2 * i + 0] = xx + yy;
    outf[2 * i + 1] = x < y ? x : -y;
  }
}

// The lines hello_printf prints for one block of `threads` threads (order
// between threads is not defined; compare sorted).
inline std::vector<std::string> hello_printf_lines(int tag, int blocks, int threads) {
  std::vector<std::string> lines;
  char buf[128];
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; t += 16) {
      snprintf(buf, sizeof(buf), "tag=%d thread=%d block=%d half=%.2f name=%s c=%c\n", tag, t, b, t * 0.5, "rgpu", 'z');
      lines.push_back(buf);
    }
  std::sort(lines.begin(), lines.end());
  return lines;
}

inline void reverse_dynamic(int* data, int n, int block) {
  std::vector<int> copy(data, data + n);
  for (int base = 0; base < n; base += block)
    for (int t = 0; t < block; ++t) {
      int src = block - 1 - t;
      if (base + t < n && base + src < n) data[base + t] = copy[base + src];
    }
}

struct Params {
  float scale;
  int offset;
  double bias;
  char tag;
  long long big;
};
struct Coeffs {
  float c[8];
};

inline void struct_param(const Params& p, const Coeffs& k, const float* in, double* out, int n) {
  for (int i = 0; i < n; ++i) {
    float poly = 0.f;
    for (int j = 7; j >= 0; --j) poly = poly * in[i] + k.c[j];
    out[i] = poly * p.scale + p.offset + p.bias + p.tag + static_cast<double>(p.big % 1000);
  }
}

struct Table {
  float a[16];
  int n;
};

inline void grid_constant(const Table& t, float* out, int threads) {
  float s = 0.f;
  for (int i = 0; i < t.n; ++i) s += t.a[i];
  for (int i = 0; i < threads; ++i) out[i] = s + t.a[i & 15];
}

// n a multiple of 32.
inline void vote_ballot(const int* in, unsigned* ballots, int* flags, int n) {
  for (int w = 0; w < n / 32; ++w) {
    unsigned b = 0;
    int all = 1, any = 0;
    for (int l = 0; l < 32; ++l) {
      int v = in[w * 32 + l];
      if (v > 0) b |= 1u << l;
      all &= v >= 0;
      any |= v > 100;
    }
    ballots[w] = b;
    flags[2 * w] = all;
    flags[2 * w + 1] = any + __builtin_popcount(b) * 2;
  }
}

inline void device_funcs(const unsigned* in, int* out, const float* coeffs, float* outf, int n) {
  for (int i = 0; i < n; ++i) {
    unsigned v = in[i];
    unsigned long long c = v + 1ull;
    int steps = 0;
    while (c != 1 && steps < 1000) {
      c = (c & 1) ? 3 * c + 1 : c / 2;
      ++steps;
    }
    out[2 * i] = steps;
    unsigned a = v, b = 360u;
    while (b) {
      unsigned t = a % b;
      a = b;
      b = t;
    }
    out[2 * i + 1] = static_cast<int>(a);
    float x = (v % 7) * 0.25f, r = 0.f;
    for (int d = static_cast<int>(v % 5); d >= 0; --d) r = r * x + coeffs[d];
    outf[i] = r;
  }
}

inline void recursion(const int* in, int* out, int n) {
  auto fib = [](int k) {
    int a = 0, b = 1;
    for (int j = 0; j < k; ++j) {
      int t = a + b;
      a = b;
      b = t;
    }
    return a;
  };
  for (int i = 0; i < n; ++i) {
    int v = in[i], sum = 0, depth = 0;
    do {
      sum += v % 10;
      v /= 10;
      ++depth;
    } while (v != 0);
    out[3 * i] = fib(in[i] % 16);
    out[3 * i + 1] = sum;
    out[3 * i + 2] = depth;
  }
}

inline void math_funcs(const float* in, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    float x = in[i];
    float* o = out + 10 * i;
    o[0] = std::exp(x);
    o[1] = std::log(x + 2.0f);
    o[2] = std::sin(x);
    o[3] = std::cos(x);
    o[4] = std::sqrt(x + 2.0f);
    o[5] = 1.0f / std::sqrt(x + 2.0f);
    o[6] = std::pow(x + 2.0f, 1.7f);
    o[7] = std::tanh(x);
    o[8] = std::atan2(x, 0.75f);
    o[9] = std::exp(x) + std::sin(x) + std::log(x + 3.0f);
  }
}

// Final values of the atomics kernel's counters for inputs in[0..n).
// iv: add, min, max, and, or, xor, cas winner (unchecked), exch; uv: inc, dec.
struct AtomicsResult {
  int iv[6];
  unsigned uv[2];
  float f;
  double d;
};
inline AtomicsResult atomics(const int* in, const int* iv0, const unsigned* uv0, int n) {
  AtomicsResult r{};
  for (int k = 0; k < 6; ++k) r.iv[k] = iv0[k];
  r.uv[0] = uv0[0];
  r.uv[1] = uv0[1];
  double f = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    int x = in[i];
    r.iv[0] += x;
    r.iv[1] = std::min(r.iv[1], x);
    r.iv[2] = std::max(r.iv[2], x);
    r.iv[3] &= x | 0x0f0f0000;
    r.iv[4] |= x & 0xff;
    r.iv[5] ^= x;
    r.uv[0] = r.uv[0] >= 16u ? 0 : r.uv[0] + 1;
    r.uv[1] = (r.uv[1] == 0 || r.uv[1] > 1000u) ? 1000u : r.uv[1] - 1;
    f += x * 0.5;
    d += x * 0.25;
  }
  r.f = static_cast<float>(f);
  r.d = d;
  return r;
}

inline void conversions(const float* in, int* oi, float* of, long long* ol, int n) {
  for (int i = 0; i < n; ++i) {
    float x = in[i];
    oi[6 * i + 0] = static_cast<int>(x);
    oi[6 * i + 1] = static_cast<int>(std::nearbyint(x));
    oi[6 * i + 2] = static_cast<int>(std::floor(x));
    oi[6 * i + 3] = static_cast<int>(std::ceil(x));
    oi[6 * i + 4] = static_cast<unsigned char>(static_cast<int>(x * 10.f));
    oi[6 * i + 5] = static_cast<short>(static_cast<int>(x * 1000.f));
    of[3 * i + 0] = std::nearbyint(x);
    of[3 * i + 1] = std::trunc(x) + std::min(1.f, std::max(0.f, x));
    of[3 * i + 2] = static_cast<float>(static_cast<double>(x) * 1.0e10);
    ol[i] = static_cast<long long>(static_cast<double>(x) * 1.0e12);
  }
}

// threads: total (a multiple of 32).
inline void warp_ops(const int* in, int* out, int threads) {
  for (int i = 0; i < threads; ++i) {
    int lane = i & 31, base = i - lane;
    int* o = out + 5 * i;
    o[0] = lane >= 3 ? in[i - 3] : in[i];
    o[1] = in[base + ((lane * 7) & 31)];
    int seg = lane & ~15;
    o[2] = in[base + seg + ((lane ^ 5) & 15)];
    int s8 = lane & ~7;
    o[3] = (lane - s8) + 2 < 8 ? in[i + 2] : in[i];
    unsigned mask = 0;
    if (in[i] & 1)
      for (int l = 0; l < 32; ++l) mask |= (in[base + l] & 1) ? (1u << l) : 0u;
    o[4] = static_cast<int>(mask);
  }
}

inline void divergence(const int* in, int* out, int n, int block) {
  int grid = (n + block - 1) / block;
  std::vector<int> acc(static_cast<size_t>(grid) * block);
  for (size_t i = 0; i < acc.size(); ++i) {
    int v = i < static_cast<size_t>(n) ? in[i] : 0;
    int a = 0;
    if (v % 3 == 0) {
      for (int k = 0; k < (v & 15); ++k) a += k * v;
    } else if (v % 3 == 1) {
      int k = v;
      while (k > 1) {
        a += (k & 1) ? 3 : -1;
        k >>= 1;
      }
    } else {
      a = -v;
    }
    acc[i] = a;
  }
  for (int i = 0; i < n; ++i) {
    int b = i / block, t = i % block;
    int nb = acc[static_cast<size_t>(b) * block + (t + 1) % block];
    out[i] = acc[i] > 50 ? acc[i] + nb : acc[i] - nb;
  }
}

inline void local_array(const int* in, int* out, int n) {
  for (int i = 0; i < n; ++i) {
    int a[24];
    for (int k = 0; k < 24; ++k) a[k] = in[i] * k + (k ^ i);
    int idx = in[i] & 15;
    int sum = 0;
    for (int k = idx; k < 24; k += 3) sum += a[k];
    a[idx] = sum;
    out[i] = a[(idx * 5) % 24] + a[idx];
  }
}

inline void bits(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  for (int i = 0; i < n; ++i) {
    unsigned x = a[i], y = b[i];
    unsigned* o = out + 12 * i;
    uint64_t xy = (static_cast<uint64_t>(y) << 32) | x;
    unsigned sel = 0x5140, r = 0;
    for (int k = 0; k < 4; ++k) r |= static_cast<unsigned>((xy >> (8 * ((sel >> (4 * k)) & 7))) & 0xff) << (8 * k);
    o[0] = r;
    unsigned s = y & 31;
    o[1] = static_cast<unsigned>((xy << s) >> 32);
    o[2] = static_cast<unsigned>(xy >> s);
    unsigned rev = 0;
    for (int k = 0; k < 32; ++k) rev |= ((x >> k) & 1u) << (31 - k);
    o[3] = rev;
    o[4] = static_cast<unsigned>(__builtin_popcount(x)) + 64u * static_cast<unsigned>(y ? __builtin_clz(y) : 32);
    o[5] = x ? static_cast<unsigned>(__builtin_ctz(x) + 1) : 0u;
    o[6] = static_cast<unsigned>((static_cast<uint64_t>(x) * y) >> 32);
    o[7] = static_cast<unsigned>(static_cast<uint64_t>((static_cast<unsigned __int128>(static_cast<uint64_t>(x) << 20) * y) >> 64));
    unsigned xl = x & 0xffff, yl = y & 0xffff;
    o[8] = (xl > yl ? xl - yl : yl - xl) + 7;
    o[9] = (x & 0xffffff) * (y & 0xffffff);
    o[10] = (x >> (y & 7)) & ((1u << ((y >> 3) & 15)) - 1);
    o[11] = static_cast<unsigned>(__builtin_popcountll(static_cast<uint64_t>(x) * y));
  }
}

// warp_sm80: redux and match on one warp's values.
inline void warp_sm80(const int* in, int* out, int threads) {
  for (int i = 0; i < threads; ++i) {
    int lane = i & 31, base = i - lane;
    int sum = 0, mn = in[base], mx = in[base];
    unsigned match = 0;
    for (int l = 0; l < 32; ++l) {
      int v = in[base + l];
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      if ((v & 7) == (in[i] & 7)) match |= 1u << l;
    }
    out[4 * i + 0] = sum;
    out[4 * i + 1] = mn;
    out[4 * i + 2] = mx;
    out[4 * i + 3] = static_cast<int>(match);
  }
}

// warp_masks: groups by (v & 3), each reducing/voting/shuffling within itself.
inline void warp_masks(const int* in, int* out, int threads) {
  for (int i = 0; i < threads; ++i) {
    int lane = i & 31, base = i - lane, v = in[i];
    int* o = out + 14 * i;
    unsigned group = 0;
    for (int l = 0; l < 32; ++l)
      if ((in[base + l] & 3) == (v & 3)) group |= 1u << l;
    int sum = 0, mn = v, mx = v, leader = -1;
    unsigned orv = 0, ballot = 0, m4 = 0;
    bool all = true, any = false, nonneg_all = true, nonneg_any = false, same4 = true;
    for (int l = 0; l < 32; ++l) {
      if (!(group >> l & 1)) continue;
      int x = in[base + l];
      if (leader < 0) leader = l, m4 = static_cast<unsigned>(x & 4);
      sum += x;
      mn = std::min(mn, x);
      mx = std::max(mx, x);
      orv |= static_cast<unsigned>(x);
      if (x > 0) ballot |= 1u << l;
      all = all && x > -500;
      any = any || x > 900;
      nonneg_all = nonneg_all && x >= 0;
      nonneg_any = nonneg_any || x >= 0;
      same4 = same4 && static_cast<unsigned>(x & 4) == m4;
    }
    o[0] = sum;
    o[1] = mn;
    o[2] = mx;
    o[3] = static_cast<int>(orv);
    o[4] = static_cast<int>(ballot);
    o[5] = all + 2 * any + 4 * (nonneg_all || !nonneg_any);
    o[6] = same4 ? static_cast<int>(group) : 0;
    o[7] = same4;
    o[8] = in[base + leader];
    o[9] = static_cast<int>(group);
    unsigned b10 = 0;
    for (int l = lane & 1; l < 32; l += 2)
      if ((lane & 1) ? in[base + l] > 0 : in[base + l] < 0) b10 |= 1u << l;
    o[10] = static_cast<int>(b10);
    o[11] = lane < 16 ? 2 * in[i + 16] : in[i - 16];
    if (lane < 24) {
      unsigned b12 = 0;
      for (int l = lane < 8 ? 0 : 8; l < (lane < 8 ? 8 : 24); ++l)
        if (in[base + l] > 0) b12 |= 1u << l;
      o[12] = static_cast<int>(b12);
    } else {
      o[12] = static_cast<int>(0xff000000u);
    }
    o[13] = lane < 8 ? -1 : lane == 31 ? v : in[i + 1];
  }
}

// cg_tiles: per 64-thread tile of a block: sum, the value of the tile's
// thread 5, any value above 900 (+ 2 * the tile's index in the block).
inline void cg_tiles(const int* in, int* out, int threads, int block) {
  for (int i = 0; i < threads; ++i) {
    int t = i % block, base = i - (t & 63), sum = 0, any = 0;
    for (int k = 0; k < 64; ++k) {
      sum += in[base + k];
      any |= in[base + k] > 900;
    }
    out[3 * i] = sum;
    out[3 * i + 1] = in[base + 5];
    out[3 * i + 2] = any + 2 * (t / 64);
  }
}

// special_regs: what the CPU device answers for the special registers.
// block_reduce: per block count/and/or of the predicates, per thread dot products.
inline void block_reduce(const int* in, int* out, int* dots, int blocks, int block) {
  for (int b = 0; b < blocks; ++b) {
    int count = 0, all = 1, any = 0;
    for (int t = 0; t < block; ++t) {
      int v = in[b * block + t];
      count += v > 0;
      all &= v > -90;
      any |= v > 95;
    }
    out[3 * b] = count;
    out[3 * b + 1] = all;
    out[3 * b + 2] = any;
  }
  auto sbyte = [](uint32_t x, int k) { return static_cast<int>(static_cast<int8_t>((x >> (8 * k)) & 0xff)); };
  auto ubyte = [](uint32_t x, int k) { return static_cast<int>((x >> (8 * k)) & 0xff); };
  for (int i = 0; i < blocks * block; ++i) {
    int v = in[i], t = i % block;
    uint32_t u = static_cast<uint32_t>(v) * 2654435761u, uv = static_cast<uint32_t>(v);
    int s4 = 7;
    unsigned u4 = 3;
    for (int k = 0; k < 4; ++k) {
      s4 += sbyte(u, k) * sbyte(uv, k);
      u4 += static_cast<unsigned>(ubyte(u, k) * ubyte(uv, k));
    }
    int s2 = -5;
    for (int k = 0; k < 2; ++k) s2 += static_cast<int>(static_cast<int16_t>((u >> (16 * k)) & 0xffff)) * sbyte(uv, k);
    int base = t & 31, offset = (v % 5) - 2;
    uint32_t pos = 0xffffffffu;
    if (offset == 0) {
      if (u & (1u << base)) pos = static_cast<uint32_t>(base);
    } else {
      int inc = offset > 0 ? 1 : -1, n = (offset > 0 ? offset : -offset) - 1;
      for (int p = base; p >= 0 && p < 32; p += inc)
        if (u & (1u << p)) {
          if (n == 0) {
            pos = static_cast<uint32_t>(p);
            break;
          }
          --n;
        }
    }
    dots[4 * i] = s4;
    dots[4 * i + 1] = static_cast<int>(u4);
    dots[4 * i + 2] = s2;
    dots[4 * i + 3] = static_cast<int>(pos);
  }
}

// math_more: 12 floats, 3 doubles and 2 long longs per element. Half and
// bfloat16 results are rounded as the device rounds them.
inline float round_bf16(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  b += 0x7fffu + ((b >> 16) & 1);
  b &= 0xffff0000u;
  memcpy(&f, &b, 4);
  return f;
}
inline void math_more(const float* in, float* out, double* outd, long long* outl, int n) {
  for (int i = 0; i < n; ++i) {
    float x = in[i];
    float* o = out + 12 * i;
    o[0] = std::erf(x);
    o[1] = std::lgamma(x + 3.0f);
    o[2] = std::cbrt(x);
    o[3] = std::fmod(x * 7.0f, 1.3f);
    o[4] = std::log10(x + 2.0f);
    o[5] = std::exp2(x);
    o[6] = std::sin(x * 3.0f) * std::cos(x * 3.0f);
    o[7] = x / 3.0f;
    o[8] = round_bf16(round_bf16(x) * 1.5f);
    o[9] = half_to_float(float_to_half(std::sqrt(half_to_float(float_to_half(x + 2.0f)))));
    o[10] = half_to_float(float_to_half(std::exp(half_to_float(float_to_half(x)))));
    o[11] = std::atan(x) + std::asin(x * 0.5f) + std::acos(x * 0.25f);
    double d = x;
    outd[3 * i + 0] = std::pow(d + 2.0, 2.3);
    outd[3 * i + 1] = std::tanh(d) + std::fmod(d * 11.0, 1.7);
    outd[3 * i + 2] = std::cbrt(d) + std::log1p(d + 1.0) + std::expm1(d);
    long long a = static_cast<long long>(x * 1e15), b = static_cast<long long>(i) * 7919 + 3;
    outl[2 * i + 0] = a / b + a % b;
    outl[2 * i + 1] = static_cast<long long>(
        static_cast<uint64_t>((static_cast<unsigned __int128>(static_cast<uint64_t>(a)) * 0x9e3779b97f4a7c15ull) >> 64));
  }
}

}  // namespace rgpu::testkernels
