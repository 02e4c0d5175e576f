// Per-message integrity (transport/sealed.h) over each transport: sealed
// messages arrive as sent, and a message changed, dropped, replayed or
// sealed under another key on the way is caught, by its header before it is
// handed on or by its payload's receive().
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>

#include "rgpu/transport/sealed.h"
#include "test_util.h"

namespace rgpu::transport::testing {
namespace {

// Over 4 MiB, and not whole pieces: the last piece is short.
constexpr size_t kLarge = (size_t{5} << 20) + 3;

SealKey key_of(uint8_t seed) {
  SealKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed * 31 + i);
  return k;
}

// Sits between the sealing and the real connection, as a peer on the path
// would: it may rewrite a byte of the nth message's header or payload, drop
// the nth message, or send it twice.
class OnThePath final : public Connection {
 public:
  enum class Act { kNone, kHeaderByte, kPayloadByte, kDrop, kReplay };
  OnThePath(std::shared_ptr<Connection> inner, Act act, int nth) : inner_(std::move(inner)), act_(act), nth_(nth) {}

  Status send(Bytes header, Bytes payload) override { return send_then(header, payload, nullptr); }
  Status send_then(Bytes header, Bytes payload, const std::function<void()>& on_posted) override {
    const int n = count_++;
    std::vector<std::byte> h(header.begin(), header.end());
    std::vector<std::byte> p(payload.begin(), payload.end());
    Status s = Status::ok();
    if (n == nth_) {
      switch (act_) {
        case Act::kHeaderByte:
          h[0] ^= std::byte{1};
          break;
        case Act::kPayloadByte:
          p[p.size() / 2] ^= std::byte{0x80};
          break;
        case Act::kDrop:
          if (on_posted) on_posted();
          return s;
        case Act::kReplay:
          s = inner_->send(h, p);
          break;
        case Act::kNone:
          break;
      }
    }
    if (s.is_ok()) s = inner_->send(h, p);
    if (on_posted) on_posted();
    return s;
  }
  void close() override { inner_->close(); }
  std::string peer() const override { return inner_->peer(); }

 private:
  std::shared_ptr<Connection> inner_;
  const Act act_;
  const int nth_;
  std::atomic<int> count_{0};
};

// What the receiving side saw: the messages it opened (headers and received
// payloads) and the first failure.
struct Opened {
  std::mutex mu;
  std::vector<std::vector<std::byte>> headers;
  std::vector<std::vector<std::byte>> payloads;
  std::vector<Status> failures;
  int forged_calls = 0;

  size_t seen() {
    std::lock_guard<std::mutex> lock(mu);
    return headers.size() + failures.size();
  }
};

class Sealed : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = make_transport(GetParam());
    ASSERT_NE(server_, nullptr);
    if (GetParam() != "inproc") client_ = make_transport(GetParam());
  }
  void TearDown() override {
    client_.reset();
    listener_.reset();
    server_.reset();
  }

  // A server that opens every message under `key` into `out`.
  std::string listen_opening(const SealKey& key, std::shared_ptr<Opened> out) {
    auto l = server_->listen("127.0.0.1:0", [key, out](std::shared_ptr<Connection>) {
      auto opener = std::make_shared<Opener>(key, [out](const Status&) {
        std::lock_guard<std::mutex> lock(out->mu);
        ++out->forged_calls;
      });
      ConnectionHandler h;
      h.on_message = [opener, out](Connection&, Message m) {
        Status st = opener->open(m);
        std::vector<std::byte> payload;
        if (st.is_ok() && m.payload) {
          payload.resize(m.payload->size());
          st = m.payload->receive(payload.data());
        }
        std::lock_guard<std::mutex> lock(out->mu);
        if (!st.is_ok()) {
          out->failures.push_back(st);
        } else {
          out->headers.push_back(std::move(m.header));
          out->payloads.push_back(std::move(payload));
        }
      };
      return h;
    });
    EXPECT_TRUE(l.is_ok()) << l.status().to_string();
    listener_ = std::move(l.value());
    return listener_->address();
  }

  std::shared_ptr<Connection> connect(const std::string& address) {
    Transport& t = client_ ? *client_ : *server_;
    auto c = t.connect(address, ConnectionHandler{}, 10s);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? c.value() : nullptr;
  }

  static bool wait_seen(Opened& o, size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (o.seen() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    return o.seen() >= n;
  }

  // Sends five messages (every second one with a payload, the third a large
  // one, tagged in pieces on several threads) sealed under `key` through
  // `act` on the path.
  std::shared_ptr<Opened> run(const SealKey& sender_key, OnThePath::Act act, int nth, size_t expect_seen) {
    auto out = std::make_shared<Opened>();
    const std::string address = listen_opening(key_of(1), out);
    auto raw = connect(address);
    if (!raw) return out;
    auto sealed = seal(std::make_shared<OnThePath>(raw, act, nth), sender_key);
    for (uint32_t i = 0; i < 5; ++i) {
      const size_t payload = i % 2 == 0 ? (i == 2 ? kLarge : 3000) : 0;
      EXPECT_TRUE(sealed->send(pattern(40 + i, i), pattern(payload, 100 + i)).is_ok());
    }
    EXPECT_TRUE(wait_seen(*out, expect_seen)) << "the server saw " << out->seen() << " messages";
    return out;
  }

  std::unique_ptr<Transport> server_;
  std::unique_ptr<Transport> client_;
  std::unique_ptr<Listener> listener_;
};

TEST_P(Sealed, MessagesArriveAsSent) {
  auto out = run(key_of(1), OnThePath::Act::kNone, -1, 5);
  std::lock_guard<std::mutex> lock(out->mu);
  ASSERT_TRUE(out->failures.empty()) << out->failures[0].to_string();
  ASSERT_EQ(out->headers.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out->headers[i], pattern(40 + i, i)) << "message " << i;
    const size_t payload = i % 2 == 0 ? (i == 2 ? kLarge : 3000) : 0;
    EXPECT_EQ(out->payloads[i], pattern(payload, 100 + i)) << "message " << i;
  }
  EXPECT_EQ(out->forged_calls, 0);
}

// Whatever is done on the path, the messages before it are delivered, that
// one fails, and so does every one after it: a forgery ends the stream.
void expect_caught_at(Opened& out, size_t at, const char* what) {
  std::lock_guard<std::mutex> lock(out.mu);
  EXPECT_EQ(out.headers.size(), at) << what;
  ASSERT_FALSE(out.failures.empty()) << what << " went unnoticed";
  EXPECT_NE(out.failures[0].message().find("integrity check failed"), std::string::npos)
      << out.failures[0].to_string();
  EXPECT_EQ(out.forged_calls, 1) << what;
}

TEST_P(Sealed, AChangedHeaderIsCaughtBeforeItIsHandedOn) {
  auto out = run(key_of(1), OnThePath::Act::kHeaderByte, 1, 5);
  expect_caught_at(*out, 1, "a changed header");
}

TEST_P(Sealed, AChangedPayloadFailsItsReceive) {
  auto out = run(key_of(1), OnThePath::Act::kPayloadByte, 2, 5);  // the large one
  expect_caught_at(*out, 2, "a changed payload");
}

TEST_P(Sealed, ADroppedMessageIsCaughtAtTheNext) {
  auto out = run(key_of(1), OnThePath::Act::kDrop, 1, 4);
  expect_caught_at(*out, 1, "a dropped message");
}

TEST_P(Sealed, AReplayedMessageIsCaught) {
  auto out = run(key_of(1), OnThePath::Act::kReplay, 0, 6);
  expect_caught_at(*out, 1, "a replayed message");
}

TEST_P(Sealed, AnotherKeyIsCaughtAtOnce) {
  auto out = run(key_of(2), OnThePath::Act::kNone, -1, 5);
  expect_caught_at(*out, 0, "a message sealed under another key");
}

// The tags are the documented ones: a header tag binds the payload's size
// and tag, and the two kinds of tag and the message numbers never coincide.
TEST(SealTags, BindTheirNumberKindAndPayload) {
  const SealKey key = key_of(7);
  const auto payload = pattern(100, 1);
  const auto header = pattern(30, 2);
  const auto p0 = payload_tag(key, 0, payload);
  EXPECT_NE(p0, payload_tag(key, 1, payload));
  EXPECT_NE(p0, payload_tag(key_of(8), 0, payload));
  const auto h0 = header_tag(key, 0, header, payload.size(), &p0);
  EXPECT_NE(h0, header_tag(key, 0, header, payload.size() - 1, &p0));
  EXPECT_NE(h0, header_tag(key, 0, header, 0, nullptr));
  EXPECT_NE(h0, header_tag(key, 1, header, payload.size(), &p0));
  // A header whose bytes equal a payload's still gets a different tag.
  EXPECT_NE(payload_tag(key, 3, header), header_tag(key, 3, header, 0, nullptr));
  // A payload tagged in pieces: the same bytes always give the same tag,
  // whatever thread tagged which piece; a byte changed in any piece, or a
  // byte less, changes it.
  auto large = pattern(kLarge, 9);
  const auto whole = payload_tag(key, 4, large);
  EXPECT_EQ(whole, payload_tag(key, 4, large));
  EXPECT_NE(whole, payload_tag(key, 5, large));
  EXPECT_NE(whole, payload_tag(key, 4, Bytes(large.data(), large.size() - 1)));
  for (size_t at : {size_t{0}, (size_t{3} << 20) + 7, kLarge - 1}) {
    large[at] ^= std::byte{4};
    EXPECT_NE(whole, payload_tag(key, 4, large)) << "byte " << at;
    large[at] ^= std::byte{4};
  }
}

INSTANTIATE_TEST_SUITE_P(Inproc, Sealed, ::testing::Values("inproc"));
INSTANTIATE_TEST_SUITE_P(Ucx, Sealed, ::testing::Values("ucx", "ucx_rndv"));

}  // namespace
}  // namespace rgpu::transport::testing
