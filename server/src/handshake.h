// The handshake of one connection before it has a session: the hello and,
// when the server requires it, the challenge and the client's proof.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lease_gate.h"
#include "rgpu/protocol/admin.h"
#include "rgpu/common/status.h"
#include "rgpu/protocol/auth.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/negotiation.h"

namespace rgpu::server {

// Resources as a client asks for them or a session is granted them
// (wire::Resources): zero is "no preference" in a request, "no limit" in a
// grant.
struct Resources {
  uint32_t devices = 0;
  uint64_t memory_bytes = 0;
  uint32_t lease_seconds = 0;
  std::string lease;  // a pool's signed lease; checked in pool mode (lease_gate.h)
  // The compute share of each device, 0 to 1: asked, the least acceptable
  // (0: any); granted, the smallest share among the session's slices (0:
  // whole devices only).
  float share = 0;
};

// One device of a session, as the server admitted it (slices.h): which of
// the server's devices it is, which slice of it, and the session's limits
// there. The session numbers its devices from 0 in the order of its
// placements.
struct Placement {
  uint32_t device = 0;  // the server's device ordinal
  int slice = -1;       // the slice of that device; -1: the whole device, shared
  uint64_t quota = 0;   // bytes of allocations the session may hold there (0: no limit)
  float share = 1;      // of the device's compute
};

// What this server offers every session: the protocol versions and features
// it speaks, and what a grant may hold.
struct Offer {
  protocol::VersionRange versions = protocol::kBuildVersions;
  uint64_t features = protocol::kBuildFeatures;
  uint32_t devices = 0;        // devices a session sees (today: all of the server's)
  uint64_t device_memory = 0;  // the memory of the largest of them
  uint64_t memory_limit = 0;   // the most a session may hold on each device (--session-memory); 0: none
  // Pool mode: a session must present a lease this gate accepts, and gets
  // exactly what it grants here. Null: no pool. Not owned; outlives the
  // handshakes.
  LeaseGate* lease_gate = nullptr;
  // Per-message integrity (--integrity); kAuto seals unless the peer is local.
  protocol::IntegrityMode integrity = protocol::IntegrityMode::kAuto;
  // The key of operator requests (--admin-key-file); null: they are
  // refused. Not owned; outlives the handshakes.
  const std::string* admin_key = nullptr;
};

// What a session was granted for `request`: today every device, and as its
// memory quota on each device the memory asked for, or the server's limit
// when none was asked for (0: no quota), and no lease term. A request for
// more devices than the server has, or for more memory than its limit (or,
// without one, than its largest device), is an error naming both. Later pool
// work decides here.
Result<Resources> grant(const Resources& request, const Offer& offer);

// What a welcomed session runs on, negotiated at the hello.
struct Terms {
  uint32_t version = 0;                   // the protocol version of the session
  protocol::VersionRange server_versions;  // what the server speaks
  uint64_t features = 0;                  // the features both sides have
  Resources requested;
  Resources granted;
  // The session's devices, filled in when the server admits it to slices;
  // empty: every device of the server, with granted.memory_bytes as quota.
  std::vector<Placement> devices;
  // Pool mode: the lease the session was admitted on and what it grants on
  // this server (the slices admit() must give it, no more, no fewer).
  std::optional<LeaseGrant> lease;

  // Sets the welcome's version, range, features and grant. (Inline: the
  // session, which writes the welcome, is also built without this file's
  // .cpp, for its fuzzer.)
  void write(wire::Welcome::Builder welcome) const {
    welcome.setProtocolVersion(version);
    welcome.setMinProtocolVersion(server_versions.min);
    welcome.setMaxProtocolVersion(server_versions.max);
    welcome.setFeatures(features);
    auto out = welcome.initGranted();
    out.setDevices(granted.devices);
    out.setMemoryBytes(granted.memory_bytes);
    out.setLeaseSeconds(granted.lease_seconds);
    if (!granted.lease.empty()) out.setLease(granted.lease);
    out.setComputeShare(granted.share);
  }
};

// Who a welcomed client is, for its session, logs and metrics, and the terms
// it was admitted on.
struct ClientIdentity {
  std::string tenant;
  std::string hostname;
  std::string program;
  std::string build;
  uint32_t pid = 0;
  Terms terms;
};

// Reads the handshake messages of one connection and says what to do next.
// Pure: bytes in, a step out, no transport, threads or clocks (the server
// enforces the time limit), so it is unit-tested and fuzzed directly. Every
// malformed input is a refusal, never an exception that escapes.
// Lifetime: the key ring must outlive it. Thread-compatible: one connection's
// messages are handed to it one at a time.
class Handshake {
 public:
  struct Step {
    enum class Kind {
      kSend,     // send `message` (the challenge) and wait for the next one
      kWelcome,  // authenticated: make the session, welcome it with `server_proof`
      kRefuse,   // send `message` (a refusing welcome), then close
      kAdmin,    // an operator proved the admin key: answer `admin` in a welcome with `server_proof`
    };
    Kind kind = Kind::kRefuse;
    std::vector<std::byte> message;
    std::string reason;                 // kRefuse: why, for logs
    ClientIdentity client;              // kWelcome
    std::vector<uint8_t> server_proof;  // kWelcome: empty without authentication
    // kWelcome: the keys of per-message integrity when the session is
    // sealed (every message after the client's proof, the welcome first).
    std::optional<protocol::auth::SealKeys> seal;
    protocol::AdminRequest admin;  // kAdmin: what the operator asks
  };

  // `keys` empty: the hello alone admits a client. A hello whose version
  // range does not meet `offer.versions` is refused with both ranges named;
  // a request the offer cannot grant is refused once the client has proved
  // who it is.
  // `local_peer`: the peer is on this host (kAuto integrity stays off).
  Handshake(const protocol::auth::KeyRing& keys, size_t max_message_bytes, Offer offer = {},
            bool local_peer = false);

  // One message from the peer: its header bytes, and whether it carried a
  // bulk payload (never allowed before a session exists).
  Step on_message(std::span<const std::byte> header, bool has_payload);

  // A refusing welcome that names `reason` and the versions the server
  // speaks, encoded for the wire.
  static std::vector<std::byte> refusal(const std::string& reason,
                                        protocol::VersionRange versions = protocol::kBuildVersions);

 private:
  enum class State { kAwaitHello, kAwaitProof, kDone };
  Step on_hello(wire::Hello::Reader hello);
  Step on_proof(wire::Authenticate::Reader answer);
  // An operator's hello (Hello.admin set): always challenged, for the admin key.
  Step on_admin_hello(wire::Hello::Reader hello);
  // Whether the session is sealed, decided from the server's mode and the
  // client's wish; a refusal when the two cannot agree.
  std::optional<Step> decide_sealing(bool insists, bool can_seal);
  // Sends the challenge (kSend) and waits for the proof.
  Step challenge();
  Step refuse(std::string reason);
  // kWelcome for the client read so far, or kRefuse when its request cannot be granted.
  Step admit();

  const protocol::auth::KeyRing& keys_;
  const size_t max_message_bytes_;
  const Offer offer_;
  const bool local_peer_;
  bool sealed_ = false;  // decided at the hello, announced in the challenge
  std::optional<protocol::AdminRequest> admin_;  // an operator's hello
  State state_ = State::kAwaitHello;
  ClientIdentity client_;
  protocol::auth::Nonce client_nonce_{};
  protocol::auth::Nonce server_nonce_{};
};

}  // namespace rgpu::server
