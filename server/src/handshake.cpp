// Handshake: hello, challenge and proof, decoded defensively.
#include "handshake.h"

#include <cstring>
#include <exception>

#include "rgpu/protocol/codec.h"

namespace rgpu::server {
namespace {

namespace auth = protocol::auth;

// Longest text field of a hello (host name, program, build) kept; longer
// ones are refused rather than cut, so logs never show a forged prefix.
constexpr size_t kMaxHelloText = 1024;
// A lease is a pool's signed token: longer than a name, still small (the
// pool's own cap, kMaxLeaseToken in rgpu/pool/lease_token.h).
constexpr size_t kMaxLeaseText = 16 * 1024;

std::vector<std::byte> to_vector(const kj::Array<capnp::word>& words) {
  auto bytes = protocol::as_bytes(words);
  return {bytes.begin(), bytes.end()};
}

// A text field, or false when it is too long. Cap'n Proto checks the NUL
// terminator when the field is read and throws for a missing one; the caller
// catches that.
bool read_text(capnp::Text::Reader text, std::string* out, size_t max = kMaxHelloText) {
  if (text.size() > max) return false;
  out->assign(text.cStr(), text.size());
  return true;
}

bool read_nonce(capnp::Data::Reader data, auth::Nonce* out) {
  if (data.size() != out->size()) return false;
  std::memcpy(out->data(), data.begin(), out->size());
  return true;
}

// "protocol version 3" or "protocol versions 1 to 2".
std::string speaks(protocol::VersionRange range) {
  return std::string(range.min == range.max ? "protocol version " : "protocol versions ") + range.describe();
}

}  // namespace

Result<Resources> grant(const Resources& request, const Offer& offer) {
  if (!(request.share >= 0 && request.share <= 1)) {  // NaN fails both
    return invalid_argument("the client asks for a compute share of " + std::to_string(request.share) +
                            "; a share is from 0 to 1");
  }
  if (request.devices > offer.devices) {
    return invalid_argument("the client asks for " + std::to_string(request.devices) + " devices; this server has " +
                            std::to_string(offer.devices));
  }
  const uint64_t most = offer.memory_limit != 0 ? offer.memory_limit : offer.device_memory;
  if (request.memory_bytes > most) {
    return invalid_argument("the client asks for " + std::to_string(request.memory_bytes) +
                            " bytes of device memory per device; this server grants at most " + std::to_string(most) +
                            (offer.memory_limit != 0 ? " (its --session-memory)" : " (its largest device)"));
  }
  Resources granted;
  granted.devices = offer.devices;
  // min(request, limit): the request already passed the limit check above.
  granted.memory_bytes = request.memory_bytes != 0 ? request.memory_bytes : offer.memory_limit;
  return granted;
}

Handshake::Handshake(const auth::KeyRing& keys, size_t max_message_bytes, Offer offer, bool local_peer)
    : keys_(keys), max_message_bytes_(max_message_bytes), offer_(offer), local_peer_(local_peer) {}

std::vector<std::byte> Handshake::refusal(const std::string& reason, protocol::VersionRange versions) {
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto welcome = builder.initRoot<wire::Envelope>().initWelcome();
  welcome.setAccepted(false);
  welcome.setRefusal(reason);
  welcome.setProtocolVersion(versions.max);
  welcome.setMinProtocolVersion(versions.min);
  welcome.setMaxProtocolVersion(versions.max);
  welcome.setServerBuild(RGPU_VERSION_STRING);
  return to_vector(protocol::encode(builder));
}

Handshake::Step Handshake::refuse(std::string reason) {
  state_ = State::kDone;
  Step step;
  step.kind = Step::Kind::kRefuse;
  step.message = refusal(reason, offer_.versions);
  step.reason = std::move(reason);
  return step;
}

Handshake::Step Handshake::on_message(std::span<const std::byte> header, bool has_payload) {
  if (state_ == State::kDone) return refuse("handshake already finished");
  if (header.size() > max_message_bytes_) {
    return refuse("handshake message of " + std::to_string(header.size()) + " bytes is over the limit of " +
                  std::to_string(max_message_bytes_));
  }
  if (has_payload) return refuse("bulk data before the session was welcomed");
  auto decoded = protocol::decode(header);
  if (!decoded.is_ok()) return refuse("malformed handshake message: " + decoded.status().message());
  try {
    auto envelope = decoded.value()->envelope();
    switch (envelope.which()) {
      case wire::Envelope::HELLO: {
        if (state_ != State::kAwaitHello) return refuse("a second hello");
        return on_hello(envelope.getHello());
      }
      case wire::Envelope::AUTHENTICATE: {
        if (state_ != State::kAwaitProof) return refuse("a proof that was not asked for");
        return on_proof(envelope.getAuthenticate());
      }
      default:
        return refuse("message of kind " + std::to_string(static_cast<int>(envelope.which())) +
                      " before the session was welcomed");
    }
  } catch (const std::exception& e) {
    // Cap'n Proto reports a wrong pointer kind or a text without its NUL
    // when the field is read.
    return refuse(std::string("malformed handshake message: ") + e.what());
  }
}

Handshake::Step Handshake::on_hello(wire::Hello::Reader hello) {
  const protocol::VersionRange theirs =
      protocol::stated_range(hello.getProtocolVersion(), hello.getMinProtocolVersion());
  if (!theirs.valid()) {
    return refuse("malformed protocol version range in hello: oldest " + std::to_string(theirs.min) + ", newest " +
                  std::to_string(theirs.max));
  }
  const auto version = protocol::highest_common(theirs, offer_.versions);
  if (!version) {
    return refuse("no common protocol version: the client speaks " + speaks(theirs) + ", this server speaks " +
                  speaks(offer_.versions) + "; use rgpu builds that share a version");
  }
  if (!read_text(hello.getTenant(), &client_.tenant) || !read_text(hello.getHostname(), &client_.hostname) ||
      !read_text(hello.getProgram(), &client_.program) || !read_text(hello.getClientBuild(), &client_.build)) {
    return refuse("hello field longer than " + std::to_string(kMaxHelloText) + " bytes");
  }
  client_.pid = hello.getPid();
  if (client_.tenant.empty()) client_.tenant = auth::kDefaultTenant;
  if (!auth::valid_tenant(client_.tenant)) return refuse("bad tenant name in hello");
  Terms& terms = client_.terms;
  terms.version = *version;
  terms.server_versions = offer_.versions;
  terms.features = hello.getFeatures() & offer_.features;
  if (hello.hasAdmin() && hello.getAdmin().which() != wire::AdminRequest::NONE) return on_admin_hello(hello);
  auto request = hello.getRequest();
  terms.requested.devices = request.getDevices();
  terms.requested.memory_bytes = request.getMemoryBytes();
  terms.requested.lease_seconds = request.getLeaseSeconds();
  terms.requested.share = request.getComputeShare();
  if (!read_text(request.getLease(), &terms.requested.lease, kMaxLeaseText)) {
    return refuse("lease in hello longer than " + std::to_string(kMaxLeaseText) + " bytes");
  }
  // Per-message integrity: what the server's mode and the client's wish
  // decide; a client that insists is never given a session without it.
  const bool insists = hello.getIntegrity();
  if (keys_.empty()) {
    if (insists) {
      return refuse("the client insists on per-message integrity (RGPU_INTEGRITY=on), which needs keys; this server "
                    "runs without authentication");
    }
    return admit();
  }
  if (auto refused = decide_sealing(insists, (hello.getFeatures() & protocol::kFeatureIntegrity) != 0)) {
    return std::move(*refused);
  }
  if (!read_nonce(hello.getClientNonce(), &client_nonce_)) {
    return refuse("authentication required: this server wants a key (RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE)");
  }
  // A challenge goes out even for a tenant without a key, so that the answer
  // does not tell which tenants exist.
  return challenge();
}

Handshake::Step Handshake::on_admin_hello(wire::Hello::Reader hello) {
  auto command = protocol::read_admin_request(hello.getAdmin());
  if (!command.is_ok()) return refuse(command.status().message());
  if (offer_.admin_key == nullptr) {
    return refuse("operator requests are off on this server: start rgpud with --admin-key-file FILE");
  }
  admin_ = command.value();
  client_.tenant = auth::kAdminIdentity;
  if (auto refused = decide_sealing(hello.getIntegrity(), (hello.getFeatures() & protocol::kFeatureIntegrity) != 0)) {
    return std::move(*refused);
  }
  if (!read_nonce(hello.getClientNonce(), &client_nonce_)) {
    return refuse("operator requests need the admin key (RGPU_ADMIN_KEY_FILE)");
  }
  return challenge();
}

std::optional<Handshake::Step> Handshake::decide_sealing(bool insists, bool can_seal) {
  switch (offer_.integrity) {
    case protocol::IntegrityMode::kOn:
      sealed_ = true;
      break;
    case protocol::IntegrityMode::kOff:
      sealed_ = false;
      break;
    case protocol::IntegrityMode::kAuto:
      sealed_ = insists || !local_peer_;
      break;
  }
  if (insists && !sealed_) {
    return refuse("the client insists on per-message integrity (RGPU_INTEGRITY=on); this server runs with "
                  "--integrity off");
  }
  if (sealed_ && !can_seal) {
    return refuse("this server seals every message of a session from another host (--integrity), and this client "
                  "library cannot; use an rgpu client of the server's version");
  }
  return std::nullopt;
}

Handshake::Step Handshake::challenge() {
  auto nonce = auth::random_nonce();
  if (!nonce.is_ok()) return refuse("server error: " + nonce.status().message());
  server_nonce_ = nonce.value();
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto challenge = builder.initRoot<wire::Envelope>().initChallenge();
  challenge.setServerNonce(
      kj::arrayPtr(reinterpret_cast<const capnp::byte*>(server_nonce_.data()), server_nonce_.size()));
  challenge.setIntegrity(sealed_);
  state_ = State::kAwaitProof;
  Step step;
  step.kind = Step::Kind::kSend;
  step.message = to_vector(protocol::encode(builder));
  return step;
}

Handshake::Step Handshake::on_proof(wire::Authenticate::Reader answer) {
  auto proof = answer.getProof();
  std::optional<std::string_view> secret;
  if (admin_) {
    secret = *offer_.admin_key;
  } else {
    secret = keys_.find(client_.tenant);
  }
  // Compute even without a key, so that the time taken does not tell either.
  const auth::Proof expected =
      auth::client_proof(secret ? *secret : std::string_view("\x01"), client_.tenant, client_nonce_, server_nonce_);
  const bool good = secret.has_value() &&
                    auth::equal_constant_time(std::span<const uint8_t>(proof.begin(), proof.size()), expected);
  if (!good) {
    return refuse(admin_ ? std::string("authentication failed: wrong admin key")
                         : "authentication failed: wrong key for tenant " + client_.tenant);
  }
  Step step;
  if (admin_) {
    state_ = State::kDone;
    step.kind = Step::Kind::kAdmin;
    step.admin = *admin_;
    step.client = client_;
  } else {
    step = admit();
    if (step.kind != Step::Kind::kWelcome) return step;
  }
  const auth::Proof mine = auth::server_proof(*secret, client_.tenant, client_nonce_, server_nonce_);
  step.server_proof.assign(mine.begin(), mine.end());
  if (sealed_) step.seal = auth::seal_keys(*secret, client_.tenant, client_nonce_, server_nonce_);
  return step;
}

Handshake::Step Handshake::admit() {
  if (offer_.lease_gate != nullptr) {
    // Pool mode: the lease, not the hello's request, says what the session gets.
    if (client_.terms.requested.lease.empty()) {
      return refuse("this server belongs to a pool: a session needs a lease from rgpu-pool "
                    "(set RGPU_POOL=host:port, or use rgpu run --pool)");
    }
    auto lease = offer_.lease_gate->check(client_.terms.requested.lease);
    if (!lease.is_ok()) return refuse("lease refused: " + lease.status().message());
    // Bound to its tenant: a copy in another tenant's hands (whose key the
    // handshake proved, where rgpud has keys) admits nothing.
    if (!lease.value().tenant.empty() && lease.value().tenant != client_.tenant) {
      return refuse("lease refused: lease " + std::to_string(lease.value().id) + " was granted to tenant " +
                    lease.value().tenant + ", not to " + client_.tenant);
    }
    client_.terms.lease = std::move(lease.value());
  } else {
    auto granted = grant(client_.terms.requested, offer_);
    if (!granted.is_ok()) return refuse("cannot grant the request: " + granted.status().message());
    client_.terms.granted = std::move(granted.value());
  }
  state_ = State::kDone;
  Step step;
  step.kind = Step::Kind::kWelcome;
  step.client = client_;
  return step;
}

}  // namespace rgpu::server
