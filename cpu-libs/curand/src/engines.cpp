// The bit generators (engines.h) and their jumps.
#include "engines.h"

#include <cstddef>

namespace rgpu::cpurand {
namespace {

// --- xorwow ----------------------------------------------------------------
// The xorshift part of xorwow is linear over GF(2) on its 160 state bits,
// so n steps are the n-th power of one 160x160 bit matrix, applied by
// square-and-multiply. The Weyl counter d grows by a constant per step.
constexpr uint32_t kWeyl = 362437;
constexpr int kBits = 160;

using Vec = std::array<uint32_t, 5>;
// A bit matrix: row r is the 160-bit vector whose dot with a state gives
// bit r of the next state.
using Mat = std::array<Vec, kBits>;

bool bit(const Vec& v, int i) { return (v[size_t(i / 32)] >> (i % 32)) & 1u; }
void set(Vec& v, int i) { v[size_t(i / 32)] |= 1u << (i % 32); }

void xorshift_step(Vec& v) {
  uint32_t t = v[0] ^ (v[0] >> 2);
  v[0] = v[1];
  v[1] = v[2];
  v[2] = v[3];
  v[3] = v[4];
  v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

Vec apply(const Mat& m, const Vec& v) {
  Vec out{};
  for (int r = 0; r < kBits; ++r) {
    uint32_t acc = 0;
    for (size_t w = 0; w < 5; ++w) acc ^= m[size_t(r)][w] & v[w];
    if (__builtin_parity(acc)) set(out, r);
  }
  return out;
}

// a * b (apply b first, then a).
Mat multiply(const Mat& a, const Mat& b) {
  // Column c of b is b applied to unit vector c; row r of a*b has bit c set
  // when row r of a dotted with that column is 1.
  std::array<Vec, kBits> cols{};
  for (int c = 0; c < kBits; ++c) {
    for (int r = 0; r < kBits; ++r) {
      if (bit(b[size_t(r)], c)) set(cols[size_t(c)], r);
    }
  }
  Mat out{};
  for (int r = 0; r < kBits; ++r) {
    for (int c = 0; c < kBits; ++c) {
      uint32_t acc = 0;
      for (size_t w = 0; w < 5; ++w) acc ^= a[size_t(r)][w] & cols[size_t(c)][w];
      if (__builtin_parity(acc)) set(out[size_t(r)], c);
    }
  }
  return out;
}

// The xorshift step's matrix raised to 2^k, k = 0..63, built once (about
// 64 squarings) and read-only after: a jump by n is then one matrix-vector
// product per set bit of n.
struct Powers {
  std::array<Mat, 64> p;
  Powers() {
    Mat m{};
    for (int c = 0; c < kBits; ++c) {
      Vec unit{};
      set(unit, c);
      xorshift_step(unit);
      for (int r = 0; r < kBits; ++r) {
        if (bit(unit, r)) set(m[size_t(r)], c);
      }
    }
    p[0] = m;
    for (size_t k = 1; k < p.size(); ++k) p[k] = multiply(p[k - 1], p[k - 1]);
  }
};

const Powers& xorshift_powers() {
  static const Powers powers;  // immutable once built; C++ makes the first use thread-safe
  return powers;
}

void xorshift_jump(Vec& v, uint64_t n) {
  // Short distances are cheaper stepped than jumped.
  if (n < 4096) {
    for (uint64_t i = 0; i < n; ++i) xorshift_step(v);
    return;
  }
  const Powers& powers = xorshift_powers();
  for (size_t k = 0; n; ++k, n >>= 1) {
    if (n & 1) v = apply(powers.p[k], v);
  }
}

// A seed spread over several words (splitmix64's finaliser), so that nearby
// seeds give unrelated states.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// --- MRG32k3a --------------------------------------------------------------
constexpr uint64_t kM1 = 4294967087ull;
constexpr uint64_t kM2 = 4294944443ull;
using M3 = std::array<std::array<uint64_t, 3>, 3>;
// One step of each component on (s[n-3], s[n-2], s[n-1]).
constexpr M3 kA1 = {{{0, 1, 0}, {0, 0, 1}, {kM1 - 810728, 1403580, 0}}};
constexpr M3 kA2 = {{{0, 1, 0}, {0, 0, 1}, {kM2 - 1370589, 0, 527612}}};

uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m) {
  return uint64_t((unsigned __int128)a * b % m);
}

M3 mat3_mul(const M3& a, const M3& b, uint64_t m) {
  M3 out{};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      uint64_t acc = 0;
      for (size_t k = 0; k < 3; ++k) acc = (acc + mulmod(a[i][k], b[k][j], m)) % m;
      out[i][j] = acc;
    }
  }
  return out;
}

std::array<uint64_t, 3> mat3_apply(const M3& a, const std::array<uint64_t, 3>& s, uint64_t m) {
  std::array<uint64_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    uint64_t acc = 0;
    for (size_t k = 0; k < 3; ++k) acc = (acc + mulmod(a[i][k], s[k], m)) % m;
    out[i] = acc;
  }
  return out;
}

void mrg_jump(std::array<uint64_t, 3>& s, M3 a, uint64_t m, uint64_t n) {
  while (n) {
    if (n & 1) s = mat3_apply(a, s, m);
    n >>= 1;
    if (n) a = mat3_mul(a, a, m);
  }
}

// A component's seed: three values below m, not all zero.
std::array<uint64_t, 3> mrg_seed(uint64_t seed, uint64_t salt, uint64_t m) {
  std::array<uint64_t, 3> s{};
  for (size_t i = 0; i < 3; ++i) s[i] = mix(seed ^ (salt + i)) % m;
  if (s[0] == 0 && s[1] == 0 && s[2] == 0) s[0] = 12345;
  return s;
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kBump0 = 0x9E3779B9u, kBump1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kBump0;
      k1 += kBump1;
    }
    const uint64_t p0 = uint64_t(kMul0) * c0;
    const uint64_t p1 = uint64_t(kMul1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = uint32_t(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return {c0, c1, c2, c3};
}

Engine::Engine(Kind kind, uint64_t seed, uint64_t position) : kind_(kind), seed_(seed) {
  switch (kind_) {
    case Kind::kXorwow: {
      // Marsaglia's initial values, perturbed by the seed; the state must
      // not be all zero, which the xor with non-zero constants avoids for
      // all but a 2^-160 chance, and that case is mapped away.
      const uint64_t a = mix(seed), b = mix(a);
      v_ = {123456789u ^ uint32_t(a), 362436069u ^ uint32_t(a >> 32), 521288629u ^ uint32_t(b),
            88675123u ^ uint32_t(b >> 32), 5783321u};
      if ((v_[0] | v_[1] | v_[2] | v_[3] | v_[4]) == 0) v_[4] = 1;
      d_ = 6615241u + uint32_t(mix(b));
      xorshift_jump(v_, position);
      d_ += uint32_t(position * kWeyl);
      break;
    }
    case Kind::kMrg32k3a:
      s1_ = mrg_seed(seed, 0, kM1);
      s2_ = mrg_seed(seed, 3, kM2);
      mrg_jump(s1_, kA1, kM1, position);
      mrg_jump(s2_, kA2, kM2, position);
      break;
    case Kind::kPhilox:
      block_ = position / 4;
      word_ = unsigned(position % 4);
      out_ = philox4x32_10(block_, 0, seed_);
      break;
  }
}

void Engine::skip(uint64_t n) {
  switch (kind_) {
    case Kind::kXorwow:
      xorshift_jump(v_, n);
      d_ += uint32_t(n * kWeyl);
      break;
    case Kind::kMrg32k3a:
      mrg_jump(s1_, kA1, kM1, n);
      mrg_jump(s2_, kA2, kM2, n);
      break;
    case Kind::kPhilox: {
      const uint64_t position = block_ * 4 + word_ + n;
      block_ = position / 4;
      word_ = unsigned(position % 4);
      out_ = philox4x32_10(block_, 0, seed_);
      break;
    }
  }
}

uint32_t Engine::next() {
  switch (kind_) {
    case Kind::kXorwow:
      xorshift_step(v_);
      d_ += kWeyl;
      return v_[4] + d_;
    case Kind::kMrg32k3a: {
      // The recurrences themselves (the matrices' last rows); every product
      // is below 2^53.
      const uint64_t p1 = (1403580 * s1_[1] % kM1 + kM1 - 810728 * s1_[0] % kM1) % kM1;
      const uint64_t p2 = (527612 * s2_[2] % kM2 + kM2 - 1370589 * s2_[0] % kM2) % kM2;
      s1_ = {s1_[1], s1_[2], p1};
      s2_ = {s2_[1], s2_[2], p2};
      const uint64_t x = p1 > p2 ? p1 - p2 : p1 - p2 + kM1;  // in [1, m1]
      // x / (m1 + 1) in (0, 1), scaled to 32 bits.
      return uint32_t((x << 32) / (kM1 + 1));
    }
    case Kind::kPhilox:
      if (word_ == 4) {
        ++block_;
        out_ = philox4x32_10(block_, 0, seed_);
        word_ = 0;
      }
      return out_[word_++];
  }
  return 0;
}

}  // namespace rgpu::cpurand
