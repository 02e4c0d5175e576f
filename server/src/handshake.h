// The handshake of one connection before it has a session: the hello and,
// when the server requires it, the challenge and the client's proof.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rgpu/protocol/auth.h"
#include "rgpu/protocol/codec.h"

namespace rgpu::server {

// Who a welcomed client is, for its session, logs and metrics.
struct ClientIdentity {
  std::string tenant;
  std::string hostname;
  std::string program;
  std::string build;
  uint32_t pid = 0;
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
    };
    Kind kind = Kind::kRefuse;
    std::vector<std::byte> message;
    std::string reason;                 // kRefuse: why, for logs
    ClientIdentity client;              // kWelcome
    std::vector<uint8_t> server_proof;  // kWelcome: empty without authentication
  };

  // `keys` empty: the hello alone admits a client.
  Handshake(const protocol::auth::KeyRing& keys, size_t max_message_bytes);

  // One message from the peer: its header bytes, and whether it carried a
  // bulk payload (never allowed before a session exists).
  Step on_message(std::span<const std::byte> header, bool has_payload);

  // A refusing welcome that names `reason`, encoded for the wire.
  static std::vector<std::byte> refusal(const std::string& reason);

 private:
  enum class State { kAwaitHello, kAwaitProof, kDone };
  Step on_hello(wire::Hello::Reader hello);
  Step on_proof(wire::Authenticate::Reader answer);
  Step refuse(std::string reason);

  const protocol::auth::KeyRing& keys_;
  const size_t max_message_bytes_;
  State state_ = State::kAwaitHello;
  ClientIdentity client_;
  protocol::auth::Nonce client_nonce_{};
  protocol::auth::Nonce server_nonce_{};
};

}  // namespace rgpu::server
