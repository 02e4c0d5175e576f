// libFuzzer harness for the server's handshake (server/src/handshake.cpp):
// Handshakes with tenant keys and an admin key, with neither, and with an
// admin key alone are fed the same sequence of messages (fuzz_input.h), and every step is checked against what the
// exchange allows:
//   - a welcome with keys only after a challenge, for an authenticate whose
//     proof is the right one for the hello's tenant and both nonces, with
//     the server's proof over the same; without keys, only for a hello;
//   - at most one challenge, only in answer to a hello, only with keys;
//   - a challenge or a welcome only for a hello whose version range meets
//     the server's, the welcome at the highest version both speak, with no
//     feature the hello lacked;
//   - an operator's answer only after a challenge to an operator's hello,
//     for the proof of the admin key for the admin identity, with the
//     server's proof over the same; never from a server without an admin
//     key, never a session for an operator's hello;
//   - after a refusal, a welcome or an answer, nothing but refusals;
//   - every refusal is an encoded, refusing welcome.
// Tags: bit 0 a payload came with the message; bits 1-2: 0 the header as
// given, 1 the right proof for the exchange so far, 2 that proof with one bit
// flipped (the fuzzer cannot compute HMACs, so the harness lends a hand).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "fuzz_input.h"
#include "handshake.h"

namespace {

namespace auth = rgpu::protocol::auth;
namespace wire = rgpu::wire;
using rgpu::server::Handshake;
using rgpu::security::fuzz::Record;

constexpr size_t kMaxMessage = 4096;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "handshake invariant violated: %s\n", what);
  std::abort();
}
#define CHECK(cond) \
  if (!(cond)) violated(#cond)

const auth::KeyRing& keys() {
  static const auth::KeyRing ring = auth::KeyRing::parse("alice alice-key\nbob bob-secret-2\n", "fuzz").value();
  return ring;
}

std::vector<std::byte> encode_proof(const auth::Proof& proof) {
  capnp::MallocMessageBuilder b(rgpu::protocol::kSmallMessageWords);
  b.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
  auto words = rgpu::protocol::encode(b);
  auto bytes = rgpu::protocol::as_bytes(words);
  return {bytes.begin(), bytes.end()};
}

// What the harness itself reads from a message, the way a correct handshake
// must read it; nothing when it does not decode or a field throws.
struct Seen {
  bool hello = false, authenticate = false, admin = false;
  std::string tenant;
  std::optional<auth::Nonce> nonce;
  std::vector<uint8_t> proof;
  rgpu::protocol::VersionRange versions;
  uint64_t features = 0;
};
Seen look(const std::vector<std::byte>& header) {
  Seen s;
  auto d = rgpu::protocol::decode(header);
  if (!d.is_ok()) return s;
  try {
    auto e = d.value()->envelope();
    if (e.isHello()) {
      auto h = e.getHello();
      s.tenant = h.getTenant();
      if (s.tenant.empty()) s.tenant = auth::kDefaultTenant;
      s.versions = rgpu::protocol::stated_range(h.getProtocolVersion(), h.getMinProtocolVersion());
      s.features = h.getFeatures();
      s.admin = h.hasAdmin() && h.getAdmin().which() != wire::AdminRequest::NONE;
      s.hello = true;
      try {  // a server without keys never reads the nonce
        if (h.getClientNonce().size() == auth::kNonceBytes) {
          s.nonce.emplace();
          std::memcpy(s.nonce->data(), h.getClientNonce().begin(), auth::kNonceBytes);
        }
      } catch (const std::exception&) {
        s.nonce.reset();
      }
    } else if (e.isAuthenticate()) {
      auto p = e.getAuthenticate().getProof();
      s.proof.assign(p.begin(), p.end());
      s.authenticate = true;
    }
  } catch (const std::exception&) {
    return Seen{};
  }
  return s;
}

// One handshake and what the harness knows of its exchange so far.
rgpu::server::Offer offer_with(const std::string* admin_key) {
  rgpu::server::Offer offer;
  offer.admin_key = admin_key;
  return offer;
}

struct Run {
  Run(const auth::KeyRing& ring, const std::string* admin_key)
      : ring(ring), admin_key(admin_key), hs(ring, kMaxMessage, offer_with(admin_key)) {}
  const auth::KeyRing& ring;
  const std::string* const admin_key;  // null: operator requests are off
  Handshake hs;
  bool finished = false, challenged = false;
  bool admin = false;  // the challenge answered an operator's hello
  std::string tenant;
  std::optional<uint32_t> version;  // what the hello's range allows
  uint64_t features = 0;
  auth::Nonce client{}, server{};

  auth::Proof right_proof() const {
    if (admin) return auth::client_proof(*admin_key, auth::kAdminIdentity, client, server);
    auto secret = ring.find(tenant);
    return auth::client_proof(secret ? *secret : "no-key", tenant, client, server);
  }

  void feed(const Record& r) {
    std::vector<std::byte> header = r.header;
    const unsigned mode = (r.tag >> 1) & 3;
    if (mode == 1 || mode == 2) {
      auth::Proof p = right_proof();
      if (mode == 2) p[r.header.empty() ? 0 : static_cast<uint8_t>(r.header[0]) % p.size()] ^= 1;
      header = encode_proof(p);
    }
    const Seen seen = look(header);
    const Handshake::Step step = hs.on_message(header, r.has_payload());
    if (finished) CHECK(step.kind == Handshake::Step::Kind::kRefuse);
    switch (step.kind) {
      case Handshake::Step::Kind::kSend: {
        CHECK(!challenged);
        CHECK(seen.hello && seen.nonce.has_value());
        CHECK(!ring.empty() || seen.admin);
        if (seen.admin) CHECK(admin_key != nullptr);
        admin = seen.admin;
        CHECK(!r.has_payload() && header.size() <= kMaxMessage);
        auto d = rgpu::protocol::decode(step.message);
        CHECK(d.is_ok() && d.value()->envelope().isChallenge());
        auto nonce = d.value()->envelope().getChallenge().getServerNonce();
        CHECK(nonce.size() == auth::kNonceBytes);
        std::memcpy(server.data(), nonce.begin(), server.size());
        client = *seen.nonce;
        tenant = admin ? auth::kAdminIdentity : seen.tenant;
        version = rgpu::protocol::highest_common(seen.versions, rgpu::protocol::kBuildVersions);
        CHECK(version.has_value());
        features = seen.features;
        challenged = true;
        break;
      }
      case Handshake::Step::Kind::kWelcome: {
        CHECK(!r.has_payload() && header.size() <= kMaxMessage);
        CHECK(!admin && !seen.admin);
        if (ring.empty()) {
          CHECK(seen.hello);
          CHECK(step.server_proof.empty());
          CHECK(step.client.tenant == seen.tenant);
          version = rgpu::protocol::highest_common(seen.versions, rgpu::protocol::kBuildVersions);
          features = seen.features;
        } else {
          CHECK(challenged && seen.authenticate);
          auto secret = ring.find(tenant);
          CHECK(secret.has_value());
          const auth::Proof expected = auth::client_proof(*secret, tenant, client, server);
          CHECK(seen.proof.size() == expected.size() &&
                std::memcmp(seen.proof.data(), expected.data(), expected.size()) == 0);
          const auth::Proof mine = auth::server_proof(*secret, tenant, client, server);
          CHECK(step.server_proof.size() == mine.size() &&
                std::memcmp(step.server_proof.data(), mine.data(), mine.size()) == 0);
          CHECK(step.client.tenant == tenant);
        }
        CHECK(version.has_value() && step.client.terms.version == *version);
        CHECK((step.client.terms.features & ~features) == 0);
        finished = true;
        break;
      }
      case Handshake::Step::Kind::kAdmin: {
        CHECK(!r.has_payload() && header.size() <= kMaxMessage);
        CHECK(admin_key != nullptr && challenged && admin && seen.authenticate);
        const auth::Proof expected = auth::client_proof(*admin_key, auth::kAdminIdentity, client, server);
        CHECK(seen.proof.size() == expected.size() &&
              std::memcmp(seen.proof.data(), expected.data(), expected.size()) == 0);
        const auth::Proof mine = auth::server_proof(*admin_key, auth::kAdminIdentity, client, server);
        CHECK(step.server_proof.size() == mine.size() &&
              std::memcmp(step.server_proof.data(), mine.data(), mine.size()) == 0);
        CHECK(step.admin.command == rgpu::protocol::AdminCommand::kListSessions ||
              step.admin.command == rgpu::protocol::AdminCommand::kEndSession);
        finished = true;
        break;
      }
      case Handshake::Step::Kind::kRefuse: {
        auto d = rgpu::protocol::decode(step.message);
        CHECK(d.is_ok() && d.value()->envelope().isWelcome());
        CHECK(!d.value()->envelope().getWelcome().getAccepted());
        CHECK(d.value()->envelope().getWelcome().getRefusal().size() > 0);
        CHECK(!step.reason.empty());
        finished = true;
        break;
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auth::KeyRing none;
  static const std::string admin_key = "root-key";
  Run with_keys(keys(), &admin_key), without_keys(none, nullptr), admin_only(none, &admin_key);
  std::span<const uint8_t> in(data, size);
  Record r;
  for (int i = 0; i < 16 && rgpu::security::fuzz::next_record(&in, &r); ++i) {
    with_keys.feed(r);
    without_keys.feed(r);
    admin_only.feed(r);
  }
  return 0;
}
