// Attacks before and during authentication, against a real rgpud over UCX,
// with a well-behaved client served throughout (see attack_fixture.h).
// Every wait is bounded; servers listen on 127.0.0.1 only.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "attack_fixture.h"
#include "client.h"
#include "rgpu/protocol/negotiation.h"
#include "wire_edit.h"

namespace rgpu::security {
namespace {

namespace auth = protocol::auth;

auth::Nonce fixed_nonce(uint8_t value) {
  auth::Nonce n;
  n.fill(value);
  return n;
}

// Sends `bytes` (and `payload`) on a new connection and expects a refusal or
// a close, never a challenge, a welcome or a reply.
void expect_refused_on_new_connection(AttackTest* t, std::unique_ptr<RawPeer> p, const std::vector<std::byte>& bytes,
                                      const std::string& what, transport::Bytes payload = {}) {
  if (!p) return;  // refused by the transport: as good
  p->send(bytes, payload);
  const Answer a = p->wait();
  EXPECT_TRUE(a.closed_or_refused()) << what << ": " << a.describe();
  EXPECT_TRUE(p->wait_closed()) << what << ": the connection stayed open";
}

// ---- before authentication -------------------------------------------------

TEST_F(AttackTest, BatchBeforeHelloIsRefused) {
  start();
  auto p = peer();
  ASSERT_TRUE(p);
  uint64_t id = 0;
  auto bytes = p->batch(RawPeer::kCtx, {[](wire::Call::Builder c) { c.setMemAlloc(4096); }}, &id);
  expect_refused_on_new_connection(this, std::move(p), bytes, "batch before hello");
}

TEST_F(AttackTest, TypeConfusedHelloAndProofAreRefused) {
  start();
  // Every pointer of a valid hello given every other kind: a list where a
  // struct is expected, a struct where a list (text, data) is, far and
  // capability pointers.
  const auto hello = RawPeer::hello("mallory", fixed_nonce(0x11));
  const auto edits = pointer_kind_sweep(hello);
  ASSERT_GE(edits.size(), 3u * 6u) << "the sweep found too few pointers";
  for (const Edited& e : edits) expect_refused_on_new_connection(this, peer(), e.bytes, "hello, " + e.what);

  // The same for the proof, after a good hello and its challenge.
  const auto proof = RawPeer::authenticate(std::vector<uint8_t>(32, 0x22));
  const auto proof_edits = pointer_kind_sweep(proof);
  ASSERT_GE(proof_edits.size(), 3u * 3u);
  for (const Edited& e : proof_edits) {
    auto p = peer();
    ASSERT_TRUE(p);
    p->send(RawPeer::hello("mallory", auth::random_nonce().value()));
    ASSERT_EQ(p->wait().kind, Answer::Kind::kChallenge);
    expect_refused_on_new_connection(this, std::move(p), e.bytes, "authenticate, " + e.what);
  }
  expect_server_serving();
}

TEST_F(AttackTest, HelloTextWithoutTerminatorIsRefused) {
  start();
  const auto hello = RawPeer::hello("mallory", fixed_nonce(0x11), "prog-name");
  for (const char* text : {"mallory", "attack-host", "prog-name", "attack-build"}) {
    auto bytes = strip_terminator(hello, text);
    ASSERT_FALSE(bytes.empty()) << text;
    expect_refused_on_new_connection(this, peer(), bytes, std::string("hello without NUL after ") + text);
  }
}

TEST_F(AttackTest, OversizedHelloIsRefused) {
  start({"--limit", "hello-bytes=4096"});
  // Over the byte limit, and under it with a text field over 1 KiB.
  expect_refused_on_new_connection(this, peer(),
                                   RawPeer::hello("mallory", fixed_nonce(0x11), std::string(64 * 1024, 'p')),
                                   "64 KiB hello");
  expect_refused_on_new_connection(this, peer(),
                                   RawPeer::hello("mallory", fixed_nonce(0x11), std::string(2000, 'p')),
                                   "hello with a 2000-byte field");
  expect_refused_on_new_connection(this, peer(), RawPeer::hello(std::string(65, 't'), fixed_nonce(0x11)),
                                   "hello with a 65-byte tenant");
}

TEST_F(AttackTest, GarbageBytesAreRefused) {
  start();
  std::mt19937_64 rng(7);
  for (size_t size : {size_t{1}, size_t{7}, size_t{8}, size_t{16}, size_t{64}, size_t{1000}, size_t{4096}}) {
    std::vector<std::byte> bytes(size);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    expect_refused_on_new_connection(this, peer(), bytes, std::to_string(size) + " random bytes");
  }
  // A segment table that promises more than is there, and one that claims
  // 2^32 segments.
  std::vector<std::byte> lying(16, std::byte{0});
  const uint32_t big = 1u << 30;
  std::memcpy(lying.data() + 4, &big, 4);
  expect_refused_on_new_connection(this, peer(), lying, "segment larger than the message");
  std::vector<std::byte> many(16, std::byte{0xff});
  expect_refused_on_new_connection(this, peer(), many, "2^32 segments");
}

TEST_F(AttackTest, PayloadWithHelloIsRefused) {
  start();
  const auto hello = RawPeer::hello("mallory", fixed_nonce(0x11));
  std::vector<std::byte> small(512, std::byte{1}), large(2 << 20, std::byte{2});  // eager and rendezvous
  expect_refused_on_new_connection(this, peer(), hello, "hello with 512 payload bytes",
                                   transport::Bytes(small.data(), small.size()));
  expect_refused_on_new_connection(this, peer(), hello, "hello with 2 MiB of payload",
                                   transport::Bytes(large.data(), large.size()));
}

TEST_F(AttackTest, SilentConnectionsAreBoundedAndTimedOut) {
  start({"--limit", "unauthenticated=4", "--limit", "hello-timeout-ms=3000"});
  // Four connections that never say hello fill the unauthenticated slots.
  std::vector<std::unique_ptr<RawPeer>> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(peer());
    ASSERT_TRUE(silent.back()) << "connection " << i;
  }
  // (The server takes accepted connections in the order they came, so the
  // next four are counted after these.)
  std::vector<std::unique_ptr<RawPeer>> extra;
  for (int i = 0; i < 4; ++i) extra.push_back(peer());
  // The extra ones are closed at once, before any hello time-out.
  for (auto& p : extra) {
    if (p) {
      EXPECT_TRUE(p->wait_closed(2000ms)) << "a connection over the limit stayed open";
    }
  }
  int still_open = 0;
  for (auto& p : silent) still_open += p->closed() ? 0 : 1;
  EXPECT_EQ(still_open, 4) << "silent connections within the limit were closed before their time-out";
  // The silent ones are closed at their time-out, with a reason.
  for (auto& p : silent) {
    const Answer a = p->wait(0, 10000ms);
    EXPECT_EQ(a.kind, Answer::Kind::kRefused) << a.describe();
    EXPECT_NE(a.message.find("no complete handshake"), std::string::npos) << a.message;
    EXPECT_TRUE(p->wait_closed());
  }
  // A legitimate client connects fine afterwards.
  GoodClient late(server_->address(), "bob", kBobKey);
  ASSERT_TRUE(late.start()) << late.tally().first_problem;
  EXPECT_TRUE(late.wait_rounds(2));
  const auto t = late.stop();
  EXPECT_EQ(t.wrong + t.errors, 0u) << t.first_problem;
}

// ---- authentication --------------------------------------------------------

TEST_F(AttackTest, WrongKeyAndUnknownTenantAreRefused) {
  start();
  for (const auto& [tenant, key] : std::vector<std::pair<std::string, std::string>>{
           {"mallory", "not-the-key"}, {"alice", kMalloryKey}, {"eve", "any-key"}, {"default", kAliceKey}}) {
    auto p = peer();
    ASSERT_TRUE(p);
    auto h = p->handshake(tenant, key);
    EXPECT_FALSE(h.welcomed) << tenant;
    EXPECT_EQ(h.last.kind, Answer::Kind::kRefused) << tenant << ": " << h.last.describe();
    EXPECT_NE(h.last.message.find("authentication failed"), std::string::npos) << h.last.message;
    EXPECT_TRUE(p->wait_closed());
  }
  // rgpu's own client says so too.
  shim::ClientOptions o;
  o.server = server_->address();
  o.tenant = "alice";
  o.auth_token = "wrong";
  auto c = shim::Client::connect(o);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("authentication"), std::string::npos) << c.status().message();
  // A hello without a nonce to a server that wants keys.
  auto p = peer();
  ASSERT_TRUE(p);
  capnp::MallocMessageBuilder b(kOneSegmentWords);
  auto hello = b.initRoot<wire::Envelope>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setTenant("mallory");
  p->send(to_bytes(b));
  const Answer a = p->wait();
  EXPECT_EQ(a.kind, Answer::Kind::kRefused) << a.describe();
}

// Peers of other protocol versions: one whose range reaches past the
// server's runs at the server's newest; one whose range ends below it is
// refused, with both ranges named, before any challenge.
TEST_F(AttackTest, VersionRangesAreNegotiated) {
  start();
  auto p = peer();
  ASSERT_TRUE(p);
  const auth::Nonce nonce = auth::random_nonce().value();
  const auto newer = RawPeer::hello("mallory", nonce, wire::MIN_PROTOCOL_VERSION, wire::PROTOCOL_VERSION + 4,
                                    ~uint64_t{0});
  const auto h = p->handshake("mallory", kMalloryKey, newer, nonce);
  ASSERT_TRUE(h.welcomed) << h.last.describe();
  EXPECT_EQ(h.last.protocol_version, wire::PROTOCOL_VERSION);
  EXPECT_EQ(h.last.min_protocol_version, wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(h.last.max_protocol_version, wire::PROTOCOL_VERSION);
  EXPECT_EQ(h.last.features, protocol::kBuildFeatures);
  EXPECT_GE(h.last.granted_devices, 1u);
  EXPECT_TRUE(p->open_context()) << "the session works";

  auto old = peer();
  ASSERT_TRUE(old);
  old->send(RawPeer::hello("mallory", auth::random_nonce().value(), 1, 2));
  const Answer a = old->wait();
  ASSERT_EQ(a.kind, Answer::Kind::kRefused) << a.describe();
  EXPECT_NE(a.message.find("protocol versions 1 to 2"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("this server speaks " + std::string(wire::MIN_PROTOCOL_VERSION == wire::PROTOCOL_VERSION
                                                                   ? "protocol version "
                                                                   : "protocol versions ") +
                           protocol::kBuildVersions.describe()),
            std::string::npos)
      << a.message;
  EXPECT_EQ(a.min_protocol_version, wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(a.max_protocol_version, wire::PROTOCOL_VERSION);
  EXPECT_TRUE(old->wait_closed());
  expect_server_serving();
}

TEST_F(AttackTest, ReplayedProofIsRefused) {
  start();
  // The attacker's own successful exchange, captured.
  auto first = peer();
  ASSERT_TRUE(first);
  const auto h = first->handshake("mallory", kMalloryKey);
  ASSERT_TRUE(h.welcomed) << h.last.describe();
  EXPECT_TRUE(h.server_proof_ok);
  // The same hello (same client nonce) and the captured proof on a new
  // connection: the server's nonce differs, so the proof is wrong there.
  for (int i = 0; i < 3; ++i) {
    auto p = peer();
    ASSERT_TRUE(p);
    p->send(RawPeer::hello("mallory", h.client_nonce));
    const Answer challenge = p->wait();
    ASSERT_EQ(challenge.kind, Answer::Kind::kChallenge) << challenge.describe();
    EXPECT_NE(challenge.server_nonce, h.server_nonce) << "the server repeated a nonce";
    p->send(RawPeer::authenticate({h.proof.begin(), h.proof.end()}));
    const Answer a = p->wait();
    EXPECT_EQ(a.kind, Answer::Kind::kRefused) << a.describe();
    EXPECT_TRUE(p->wait_closed());
  }
  // The proof sent twice on one connection, and a proof before any hello.
  auto p = peer();
  ASSERT_TRUE(p);
  p->send(RawPeer::authenticate({h.proof.begin(), h.proof.end()}));
  EXPECT_EQ(p->wait().kind, Answer::Kind::kRefused);
  // The first session still works: a replay cost it nothing.
  EXPECT_TRUE(first->open_context());
  EXPECT_NE(first->alloc(4096), 0u);
}

TEST_F(AttackTest, SecondHelloAfterWelcomeClosesTheSession) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t ptr = p->alloc(4096);
  ASSERT_NE(ptr, 0u);
  p->send(RawPeer::hello("alice", auth::random_nonce().value()));
  const Answer a = p->wait();
  EXPECT_EQ(a.kind, Answer::Kind::kClosed) << a.describe();
  EXPECT_TRUE(p->wait_closed());
  // The same after an authenticate, a welcome and a challenge sent by the client.
  for (int kind = 0; kind < 3; ++kind) {
    auto q = session();
    ASSERT_TRUE(q);
    capnp::MallocMessageBuilder b(kOneSegmentWords);
    auto envelope = b.initRoot<wire::Envelope>();
    if (kind == 0) envelope.initAuthenticate().setProof(kj::arrayPtr(reinterpret_cast<const uint8_t*>("x"), 1));
    if (kind == 1) envelope.initWelcome().setAccepted(true);
    if (kind == 2) envelope.initChallenge();
    q->send(to_bytes(b));
    EXPECT_TRUE(q->wait_closed()) << "message kind " << kind;
  }
  expect_server_serving();
}

TEST_F(AttackTest, ClientWithAKeyRefusesAServerThatDoesNotAuthenticate) {
  start();
  RgpudProcess open_server({});  // no keys: loopback only
  ASSERT_TRUE(open_server.ok()) << open_server.log_tail();
  shim::ClientOptions o;
  o.server = open_server.address();
  o.tenant = "alice";
  o.auth_token = kAliceKey;
  auto c = shim::Client::connect(o);
  ASSERT_FALSE(c.is_ok()) << "the client used a server that proved nothing";
  EXPECT_NE(c.status().message().find("did not prove"), std::string::npos) << c.status().message();
  EXPECT_TRUE(open_server.alive());
}

// A server impostor in the test: challenges the client, then welcomes it
// with the proof `forge` makes from the nonces. Its state is shared with the
// transport's handlers, which may outlive the object.
class Impostor {
 public:
  using Forge = std::function<std::vector<uint8_t>(const auth::Nonce& client, const auth::Nonce& server,
                                                   const std::vector<uint8_t>& client_proof)>;
  Impostor(transport::Transport& transport, Forge forge) : state_(std::make_shared<State>()) {
    state_->forge = std::move(forge);
    auto l = transport.listen("127.0.0.1:0", [state = state_](std::shared_ptr<transport::Connection> c) {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        state->connections.push_back(c);
      }
      transport::ConnectionHandler h;
      h.on_message = [state](transport::Connection& conn, transport::Message m) { state->on_message(conn, m); };
      h.on_closed = [](transport::Connection&, const Status&) {};
      return h;
    });
    if (l.is_ok()) listener_ = std::move(l.value());
  }
  ~Impostor() {
    listener_.reset();
    std::vector<std::shared_ptr<transport::Connection>> connections;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      connections.swap(state_->connections);
    }
    for (auto& c : connections) c->close();
  }
  std::string address() const { return listener_ ? listener_->address() : ""; }

 private:
  struct State {
    void on_message(transport::Connection& conn, const transport::Message& m) {
      auto d = protocol::decode(m.header);
      if (!d.is_ok()) return;
      auto envelope = d.value()->envelope();
      capnp::MallocMessageBuilder b(kOneSegmentWords);
      std::lock_guard<std::mutex> lock(mu);
      if (envelope.isHello()) {
        auto nonce = envelope.getHello().getClientNonce();
        if (nonce.size() != client.size()) return;
        std::memcpy(client.data(), nonce.begin(), client.size());
        server = auth::random_nonce().value();
        b.initRoot<wire::Envelope>().initChallenge().setServerNonce(kj::arrayPtr(server.data(), server.size()));
      } else if (envelope.isAuthenticate()) {
        auto proof = envelope.getAuthenticate().getProof();
        const auto forged = forge(client, server, {proof.begin(), proof.end()});
        auto w = b.initRoot<wire::Envelope>().initWelcome();
        w.setAccepted(true);
        w.setProtocolVersion(wire::PROTOCOL_VERSION);
        w.setServerProof(kj::arrayPtr(forged.data(), forged.size()));
        w.setTenant("alice");
        w.initDevices(1)[0].setName("impostor");
      } else {
        return;
      }
      const auto bytes = to_bytes(b);
      (void)conn.send(transport::Bytes(bytes.data(), bytes.size()));
    }
    std::mutex mu;
    Forge forge;
    auth::Nonce client{}, server{};
    std::vector<std::shared_ptr<transport::Connection>> connections;
  };
  std::shared_ptr<State> state_;
  std::unique_ptr<transport::Listener> listener_;
};

TEST_F(AttackTest, ClientChecksTheServersProof) {
  start();
  struct Case {
    const char* what;
    Impostor::Forge forge;
    bool accepted;
  };
  const std::vector<Case> cases = {
      {"no proof", [](auto&, auto&, auto&) { return std::vector<uint8_t>(); }, false},
      {"zeros", [](auto&, auto&, auto&) { return std::vector<uint8_t>(32, 0); }, false},
      {"the client's own proof reflected", [](auto&, auto&, const auto& p) { return p; }, false},
      {"a proof under another key",
       [](const auth::Nonce& c, const auth::Nonce& s, auto&) {
         const auto p = auth::server_proof(kMalloryKey, "alice", c, s);
         return std::vector<uint8_t>(p.begin(), p.end());
       },
       false},
      {"the right proof (control)",
       [](const auth::Nonce& c, const auth::Nonce& s, auto&) {
         const auto p = auth::server_proof(kAliceKey, "alice", c, s);
         return std::vector<uint8_t>(p.begin(), p.end());
       },
       true},
  };
  // The impostor has a transport of its own, as another process would.
  auto own = transport::make_ucx_transport();
  ASSERT_TRUE(own.is_ok());
  std::vector<std::unique_ptr<Impostor>> impostors;  // kept until the clients are gone
  for (const Case& k : cases) {
    impostors.push_back(std::make_unique<Impostor>(*own.value(), k.forge));
    Impostor& impostor = *impostors.back();
    ASSERT_FALSE(impostor.address().empty());
    shim::ClientOptions o;
    o.server = impostor.address();
    o.tenant = "alice";
    o.auth_token = kAliceKey;
    auto c = shim::Client::connect(o);
    EXPECT_EQ(c.is_ok(), k.accepted) << k.what << ": " << (c.is_ok() ? "accepted" : c.status().message());
    if (!k.accepted && !c.is_ok()) {
      EXPECT_NE(c.status().message().find("did not prove"), std::string::npos) << k.what << ": " << c.status().message();
    }
  }
}

}  // namespace
}  // namespace rgpu::security
