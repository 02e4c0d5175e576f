// Per-message integrity for an established connection (docs/security.md,
// "Integrity after the handshake"). Each direction has its own 256-bit key,
// derived by both sides from the handshake, and counts its messages from 0.
// A message goes out as
//
//   header | payload tag (16 bytes, when there is a payload) | header tag (16)
//
// Both tags are AES-256-GCM authenticators (GMAC: nothing is encrypted). The
// IV is the direction's message number and which tag it is, so a message
// rewritten, replayed, reordered, dropped or moved to the other direction
// fails; the header tag covers the header, the payload's length and its tag.
// A payload over 1 MiB is tagged in pieces of 1 MiB (each under an IV that
// also names the piece), several at once from 4 MiB on, and its tag is the
// GMAC of the pieces' tags.
// The receiver checks the header tag before the message is handed on and the
// payload tag once receive() has the bytes, failing that receive.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

#include "rgpu/common/status.h"
#include "rgpu/transport/transport.h"

namespace rgpu::transport {

using SealKey = std::array<uint8_t, 32>;
constexpr size_t kSealTagBytes = 16;

// Wraps `inner` so that every message sent through it is sealed under `key`
// (this side's sending key). Sends are numbered in the connection's order:
// each holds a lock from numbering until the inner connection has posted it.
// Everything else (close, receive limits, registrations, polling) is the
// inner connection's. No CUDA memory: the tags are computed on the host.
std::shared_ptr<Connection> seal(std::shared_ptr<Connection> inner, const SealKey& key);

// Checks the messages of one direction, in arrival order (a connection's
// handler runs one at a time). Not thread-safe; the payload checks it hands
// out are, and may run after it is gone.
class Opener {
 public:
  // `forged` runs once, on whichever thread finds a forgery (a header check
  // here or a payload's receive()), with the reason; typically it closes the
  // connection.
  Opener(const SealKey& key, std::function<void(const Status&)> forged);
  ~Opener();
  Opener(const Opener&) = delete;
  Opener& operator=(const Opener&) = delete;

  // Checks `message` and, when it is genuine, strips its tags and wraps its
  // payload so that receive() checks the bytes. On failure `message` is left
  // as it arrived, `forged` has run, and every later message fails too.
  Status open(Message& message);
  uint64_t opened() const { return next_; }

  struct Shared;  // with the payload checks (sealed.cpp)

 private:
  struct Mac;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<Mac> mac_;  // the header checks'
  uint64_t next_ = 0;
};

// The two tags of message number `seq` (for tests and benchmarks): the
// payload's, then the header's over `header`, the payload length and it.
std::array<uint8_t, kSealTagBytes> payload_tag(const SealKey& key, uint64_t seq, Bytes payload);
std::array<uint8_t, kSealTagBytes> header_tag(const SealKey& key, uint64_t seq, Bytes header, uint64_t payload_size,
                                              const std::array<uint8_t, kSealTagBytes>* ptag);

}  // namespace rgpu::transport
