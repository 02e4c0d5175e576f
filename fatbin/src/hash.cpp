// Content hash of module images: SHA-256 from OpenSSL's libcrypto, which
// every rgpu binary links already (session authentication) and which uses
// the CPU's SHA extensions where it has them.
#include <openssl/sha.h>

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

ContentHash content_hash(Bytes data) {
  static_assert(sizeof(ContentHash{}.bytes) == SHA256_DIGEST_LENGTH);
  ContentHash out;
  SHA256(data.data(), data.size(), out.bytes.data());
  return out;
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
