// Per-message integrity: AES-256-GCM authenticators (OpenSSL's libcrypto)
// over each message, numbered per direction. See sealed.h for the format.
#include "rgpu/transport/sealed.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace rgpu::transport {
namespace {

using Tag = std::array<uint8_t, kSealTagBytes>;

enum : uint8_t { kPayloadTag = 1, kHeaderTag = 2, kPieceTag = 3 };

// A payload larger than a piece is tagged piece by piece (each piece's tag
// under its own IV), and its tag is the GMAC of the pieces' tags: the pieces
// of a large payload are tagged on several threads at once.
constexpr size_t kPieceBytes = size_t{1} << 20;
constexpr size_t kParallelFrom = size_t{4} << 20;  // below: the calling thread alone
constexpr unsigned kMostThreads = 8;

// One GMAC computation at a time under one key; the key schedule is set once.
class Gmac {
 public:
  explicit Gmac(const SealKey& key) : ctx_(EVP_CIPHER_CTX_new()) {
    if (ctx_ == nullptr || EVP_EncryptInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key.data(), nullptr) != 1) {
      std::abort();  // out of memory in libcrypto: nothing sensible is left to do
    }
  }
  ~Gmac() { EVP_CIPHER_CTX_free(ctx_); }
  Gmac(const Gmac&) = delete;
  Gmac& operator=(const Gmac&) = delete;

  // The 96-bit IV: which tag, then the message number (big-endian).
  // `piece`: which piece of a payload (kPieceTag), 24 bits; else 0.
  void begin(uint8_t kind, uint64_t seq, uint32_t piece = 0) {
    uint8_t iv[12] = {kind, static_cast<uint8_t>(piece >> 16), static_cast<uint8_t>(piece >> 8),
                      static_cast<uint8_t>(piece)};
    for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
    (void)EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, iv);
  }
  void add(const void* data, size_t size) {
    auto* p = static_cast<const unsigned char*>(data);
    while (size > 0) {
      const int n = static_cast<int>(std::min<size_t>(size, INT_MAX / 2));
      int out = 0;
      (void)EVP_EncryptUpdate(ctx_, nullptr, &out, p, n);  // additional data only
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  Tag finish() {
    Tag tag{};
    int out = 0;
    (void)EVP_EncryptFinal_ex(ctx_, nullptr, &out);
    (void)EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag.size()), tag.data());
    return tag;
  }

 private:
  EVP_CIPHER_CTX* ctx_;
};

Tag compute_payload_tag(Gmac& mac, const SealKey& key, uint64_t seq, const void* data, size_t size) {
  if (size <= kPieceBytes) {
    mac.begin(kPayloadTag, seq);
    mac.add(data, size);
    return mac.finish();
  }
  // Pieces of at least 1 MiB, and never more than 2^24 of them (their IVs).
  const size_t piece_bytes = std::max(kPieceBytes, (size + (size_t{1} << 24) - 1) >> 24);
  const size_t pieces = (size + piece_bytes - 1) / piece_bytes;
  std::vector<Tag> tags(pieces);
  const auto* bytes = static_cast<const uint8_t*>(data);
  auto tag_pieces = [&](Gmac& g, size_t first, size_t step) {
    for (size_t i = first; i < pieces; i += step) {
      g.begin(kPieceTag, seq, static_cast<uint32_t>(i));
      g.add(bytes + i * piece_bytes, std::min(piece_bytes, size - i * piece_bytes));
      tags[i] = g.finish();
    }
  };
  // Helper threads for this payload only (no pool to survive a fork); one
  // that cannot start leaves its share to the calling thread.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads =
      size >= kParallelFrom ? static_cast<unsigned>(std::min<size_t>({cores, kMostThreads, pieces})) : 1;
  std::vector<std::thread> helpers;
  std::vector<size_t> left_over;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back([&, t] {
        Gmac g(key);
        tag_pieces(g, t, threads);
      });
    } catch (const std::system_error&) {
      left_over.push_back(t);
    }
  }
  Gmac own(key);
  tag_pieces(own, 0, threads);
  for (size_t t : left_over) tag_pieces(own, t, threads);
  for (auto& h : helpers) h.join();
  mac.begin(kPayloadTag, seq);
  mac.add(tags.data(), tags.size() * sizeof(Tag));
  return mac.finish();
}

Tag compute_header_tag(Gmac& mac, uint64_t seq, Bytes header, uint64_t payload_size, const Tag* ptag) {
  mac.begin(kHeaderTag, seq);
  mac.add(header.data(), header.size());
  uint8_t size_bytes[8];
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<uint8_t>(payload_size >> (8 * i));
  mac.add(size_bytes, sizeof size_bytes);
  if (ptag != nullptr) mac.add(ptag->data(), ptag->size());
  return mac.finish();
}

bool same(const Tag& a, const uint8_t* b) { return CRYPTO_memcmp(a.data(), b, a.size()) == 0; }

class SealedConnection final : public Connection {
 public:
  SealedConnection(std::shared_ptr<Connection> inner, const SealKey& key)
      : inner_(std::move(inner)), key_(key), mac_(key) {}

  Status send(Bytes header, Bytes payload) override { return send_then(header, payload, nullptr); }

  Status send_then(Bytes header, Bytes payload, const std::function<void()>& on_posted) override {
    std::unique_lock<std::mutex> lock(mu_);
    const std::vector<std::byte> sealed = frame(header, payload);
    // Numbered in the inner connection's order: the next send may number
    // itself once this one has its place.
    return inner_->send_then(Bytes(sealed), payload, [&] {
      lock.unlock();
      if (on_posted) on_posted();
    });
  }

  void send_detached(Bytes header, Bytes payload, std::function<void(const Status&)> done) override {
    // A message that cannot be posted calls done on this thread, inside the
    // inner call: it runs once the sealing lock is released, so that it may
    // send on this connection again.
    struct Posting {
      std::mutex mu;
      bool posting = true;
      bool ended = false;
      Status status;
    };
    auto posting = std::make_shared<Posting>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::vector<std::byte> sealed = frame(header, payload);
      inner_->send_detached(Bytes(sealed), payload, [posting, done](const Status& st) {  // copies the header
        {
          std::lock_guard<std::mutex> l(posting->mu);
          if (posting->posting) {
            posting->ended = true;
            posting->status = st;
            return;
          }
        }
        done(st);
      });
    }
    {
      std::lock_guard<std::mutex> l(posting->mu);
      posting->posting = false;
      if (!posting->ended) return;
    }
    done(posting->status);
  }

  void close() override { inner_->close(); }
  std::string peer() const override { return inner_->peer(); }
  bool poll_until(const std::function<bool()>& done, std::chrono::microseconds budget) override {
    return inner_->poll_until(done, budget);
  }
  Status register_memory(void* ptr, size_t size) override { return inner_->register_memory(ptr, size); }
  void unregister_memory(void* ptr) override { inner_->unregister_memory(ptr); }
  // The tags are computed from host memory.
  bool supports_cuda_memory() const override { return false; }
  void set_receive_limits(const ReceiveLimits& limits) override { inner_->set_receive_limits(limits); }

 private:
  // Under mu_: the sealed header of the next message.
  std::vector<std::byte> frame(Bytes header, Bytes payload) {
    const uint64_t seq = next_++;
    std::vector<std::byte> out;
    out.reserve(header.size() + 2 * kSealTagBytes);
    out.insert(out.end(), header.begin(), header.end());
    Tag ptag{};
    if (!payload.empty()) {
      ptag = compute_payload_tag(mac_, key_, seq, payload.data(), payload.size());
      const auto* p = reinterpret_cast<const std::byte*>(ptag.data());
      out.insert(out.end(), p, p + ptag.size());
    }
    const Tag htag = compute_header_tag(mac_, seq, header, payload.size(), payload.empty() ? nullptr : &ptag);
    const auto* h = reinterpret_cast<const std::byte*>(htag.data());
    out.insert(out.end(), h, h + htag.size());
    return out;
  }

  const std::shared_ptr<Connection> inner_;
  std::mutex mu_;
  const SealKey key_;
  Gmac mac_;           // mu_
  uint64_t next_ = 0;  // mu_
};

}  // namespace

struct Opener::Shared {
  SealKey key;
  std::function<void(const Status&)> forged;
  std::atomic<bool> bad{false};

  Status forge(const std::string& why) {
    Status st = failed("integrity check failed: " + why);
    if (!bad.exchange(true) && forged) forged(st);
    return st;
  }
};

namespace {

// A payload whose bytes are checked against their tag once received.
class CheckedPayload final : public IncomingPayload {
 public:
  CheckedPayload(std::unique_ptr<IncomingPayload> inner, std::shared_ptr<Opener::Shared> shared, uint64_t seq,
                 const Tag& tag)
      : inner_(std::move(inner)), shared_(std::move(shared)), seq_(seq), tag_(tag) {}
  size_t size() const override { return inner_->size(); }
  Status receive(void* dst) override {
    Status s = inner_->receive(dst);
    if (!s.is_ok()) return s;
    Gmac mac(shared_->key);
    if (!same(compute_payload_tag(mac, shared_->key, seq_, dst, inner_->size()), tag_.data())) {
      return shared_->forge("the payload of message " + std::to_string(seq_) + " was changed on the way");
    }
    return Status::ok();
  }

 private:
  std::unique_ptr<IncomingPayload> inner_;
  std::shared_ptr<Opener::Shared> shared_;
  const uint64_t seq_;
  const Tag tag_;
};

}  // namespace

struct Opener::Mac {
  explicit Mac(const SealKey& key) : gmac(key) {}
  Gmac gmac;
};

Opener::Opener(const SealKey& key, std::function<void(const Status&)> forged)
    : shared_(std::make_shared<Shared>()), mac_(std::make_unique<Mac>(key)) {
  shared_->key = key;
  shared_->forged = std::move(forged);
}

Opener::~Opener() = default;

Status Opener::open(Message& message) {
  if (shared_->bad.load()) return failed("integrity check failed earlier on this connection");
  const bool has_payload = message.payload != nullptr;
  const size_t tags = kSealTagBytes * (has_payload ? 2 : 1);
  const uint64_t seq = next_;
  if (message.header.size() < tags) {
    return shared_->forge("message " + std::to_string(seq) + " is too short to carry its tags");
  }
  const size_t header_size = message.header.size() - tags;
  const auto* raw = reinterpret_cast<const uint8_t*>(message.header.data());
  Tag ptag{};
  if (has_payload) std::memcpy(ptag.data(), raw + header_size, ptag.size());
  const Tag expected = compute_header_tag(mac_->gmac, seq, Bytes(message.header.data(), header_size),
                                          has_payload ? message.payload->size() : 0, has_payload ? &ptag : nullptr);
  if (!same(expected, raw + message.header.size() - kSealTagBytes)) {
    return shared_->forge("message " + std::to_string(seq) + " was changed, replayed or reordered on the way");
  }
  ++next_;
  message.header.resize(header_size);
  if (has_payload) message.payload = std::make_unique<CheckedPayload>(std::move(message.payload), shared_, seq, ptag);
  return Status::ok();
}

std::array<uint8_t, kSealTagBytes> payload_tag(const SealKey& key, uint64_t seq, Bytes payload) {
  Gmac mac(key);
  return compute_payload_tag(mac, key, seq, payload.data(), payload.size());
}

std::array<uint8_t, kSealTagBytes> header_tag(const SealKey& key, uint64_t seq, Bytes header, uint64_t payload_size,
                                              const std::array<uint8_t, kSealTagBytes>* ptag) {
  Gmac mac(key);
  return compute_header_tag(mac, seq, header, payload_size, ptag);
}

std::shared_ptr<Connection> seal(std::shared_ptr<Connection> inner, const SealKey& key) {
  return std::make_shared<SealedConnection>(std::move(inner), key);
}

}  // namespace rgpu::transport
