// Content hash: SHA-256 test vectors, stability and sensitivity.
#include <random>

#include "rgpu/fatbin/fatbin.h"
#include "test_util.h"

namespace rgpu::fatbin {
namespace {

using testing::load;

ContentHash of(std::string_view s) {
  return content_hash(Bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

TEST(Hash, Sha256Vectors) {
  EXPECT_EQ(of("").to_hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(of("abc").to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").to_hex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Lengths around the 55/56/64-byte padding boundaries.
  EXPECT_EQ(of(std::string(55, 'a')).to_hex(),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(of(std::string(56, 'a')).to_hex(),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(of(std::string(64, 'a')).to_hex(),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(of(std::string(1000, 'a')).to_hex(),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Hash, StableAndSensitive) {
  std::vector<std::uint8_t> a = load("default.fatbin");
  const ContentHash h = content_hash(Bytes(a));
  EXPECT_EQ(content_hash(Bytes(a)), h);
  EXPECT_EQ(h.to_hex().size(), 64u);
  EXPECT_EQ(h.prefix64(), std::stoull(h.to_hex().substr(0, 16), nullptr, 16));
  EXPECT_EQ(ContentHashHasher{}(h), h.prefix64());
  a[a.size() / 2] ^= 1;
  EXPECT_NE(content_hash(Bytes(a)), h);
  EXPECT_NE(content_hash(Bytes(load("none.fatbin"))), h);
}

// Long inputs: the FIPS 180-2 million-'a' vector, and a hash that depends
// on every byte of a large random buffer, at every length near the block
// boundaries.
TEST(Hash, LongInputs) {
  EXPECT_EQ(of(std::string(1000000, 'a')).to_hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::mt19937 rng(7);
  std::vector<std::uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  const ContentHash whole = content_hash(Bytes(buf));
  for (std::size_t n = 0; n <= 130; ++n) {
    ASSERT_NE(content_hash(Bytes(buf).first(n)), whole) << "length " << n;
  }
  buf[69999] ^= 0x80;
  EXPECT_NE(content_hash(Bytes(buf)), whole);
}

}  // namespace
}  // namespace rgpu::fatbin
