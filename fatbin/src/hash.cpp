// Content hash of module images: SHA-256 (FIPS 180-4), with the x86 SHA
// extensions when the CPU has them (several times faster).
#include "hash.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace rgpu::fatbin {

namespace {

constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress_one(std::uint32_t state[8], const std::uint8_t block[64]) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{block[4 * i]} << 24) | (std::uint32_t{block[4 * i + 1]} << 16) |
           (std::uint32_t{block[4 * i + 2]} << 8) | std::uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  std::uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const std::uint32_t ch = (e & f) ^ (~e & g);
    const std::uint32_t t1 = h + s1 + ch + kRound[i] + w[i];
    const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

// Portable compression of `blocks` 64-byte blocks.
void compress_portable(std::uint32_t state[8], const std::uint8_t* data, std::size_t blocks) {
  for (std::size_t i = 0; i < blocks; ++i) compress_one(state, data + 64 * i);
}

#if defined(__x86_64__)
bool cpu_has_sha() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29))) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & (1u << 19)) && (c & (1u << 9));  // SSE4.1, SSSE3
}

// The same compression with SHA-NI. State is kept as ABEF / CDGH vectors,
// the layout sha256rnds2 works on; each step does four rounds.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_shani(std::uint32_t state[8],
                                                                const std::uint8_t* data,
                                                                std::size_t blocks) {
  const __m128i kSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));
  __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);    // CDAB
  s1 = _mm_shuffle_epi32(s1, 0x1B);      // EFGH
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);  // ABEF
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);       // CDGH
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = data + 64 * b;
    const __m128i abef = s0, cdgh = s1;
    __m128i w[4];  // message words 4i..4i+3 of the last four groups
    for (int i = 0; i < 16; ++i) {
      __m128i m;
      if (i < 4) {
        m = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i)), kSwap);
      } else {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a time.
        m = _mm_sha256msg1_epu32(w[i % 4], w[(i + 1) % 4]);
        m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4));
        m = _mm_sha256msg2_epu32(m, w[(i + 3) % 4]);
      }
      w[i % 4] = m;
      __m128i k = _mm_add_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRound[4 * i])));
      s1 = _mm_sha256rnds2_epu32(s1, s0, k);
      k = _mm_shuffle_epi32(k, 0x0E);
      s0 = _mm_sha256rnds2_epu32(s0, s1, k);
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);      // FEBA
  s1 = _mm_shuffle_epi32(s1, 0xB1);       // DCHG
  s0 = _mm_blend_epi16(tmp, s1, 0xF0);    // DCBA
  s1 = _mm_alignr_epi8(s1, tmp, 8);       // ABEF -> HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), s1);
}
#endif

using CompressFn = void (*)(std::uint32_t*, const std::uint8_t*, std::size_t);

ContentHash sha256(Bytes data, CompressFn compress) {
  std::uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                            0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const std::size_t full = data.size() / 64;
  if (full != 0) compress(state, data.data(), full);
  const std::size_t i = full * 64;
  std::uint8_t tail[128] = {};
  const std::size_t rest = data.size() - i;
  if (rest != 0) std::memcpy(tail, data.data() + i, rest);
  tail[rest] = 0x80;
  const std::size_t blocks = rest + 1 + 8 <= 64 ? 1 : 2;
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int b = 0; b < 8; ++b) tail[blocks * 64 - 1 - b] = static_cast<std::uint8_t>(bits >> (8 * b));
  compress(state, tail, blocks);
  ContentHash out;
  for (int k = 0; k < 8; ++k) {
    for (int b = 0; b < 4; ++b) out.bytes[4 * k + b] = static_cast<std::uint8_t>(state[k] >> (24 - 8 * b));
  }
  return out;
}

}  // namespace

namespace detail {

ContentHash content_hash_portable(Bytes data) { return sha256(data, compress_portable); }

}  // namespace detail

ContentHash content_hash(Bytes data) {
#if defined(__x86_64__)
  if (cpu_has_sha()) return sha256(data, compress_shani);
#endif
  return sha256(data, compress_portable);
}

std::uint64_t ContentHash::prefix64() const {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | bytes[i];
  return v;
}

std::string ContentHash::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (std::uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xf]);
  }
  return s;
}

}  // namespace rgpu::fatbin
