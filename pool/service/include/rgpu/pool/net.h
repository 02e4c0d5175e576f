// The pool's control-plane transport: length-framed Cap'n Proto messages
// over plain TCP (protocol/pool.capnp says why TCP). Framing, bounded
// decoding, and a blocking channel for the pool's peers (rgpud's agent,
// clients, `rgpu pool status`); the pool's own event loop uses the framing
// and decoder with non-blocking sockets.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pool.capnp.h"
#include "rgpu/common/status.h"

namespace rgpu::pool::net {

// The largest frame a peer of the pool accepts by default; a status reply of
// a large pool is the biggest message, so readers of status take more.
constexpr size_t kMaxFrame = size_t{1} << 20;
constexpr size_t kMaxStatusFrame = size_t{64} << 20;
constexpr size_t kFrameHeader = 4;

// The bytes of one frame: a 4-byte little-endian length, then the message.
std::vector<std::byte> frame(capnp::MessageBuilder& message);

// A decoded message. Owns its words; the reader is valid while it lives.
class Message {
 public:
  poolwire::PoolMessage::Reader root() const { return root_; }

 private:
  friend Result<Message> decode_body(std::vector<capnp::word> words);
  std::vector<capnp::word> words_;
  std::shared_ptr<capnp::FlatArrayMessageReader> reader_;
  poolwire::PoolMessage::Reader root_;
};

// Decodes one frame's body: walked once with a traversal limit (twice the
// body's size) and a nesting limit, so a malformed or amplifying message is
// an invalid-argument error, never a crash. Text fields are checked by the
// readers of wire.h.
Result<Message> decode_body(std::vector<capnp::word> words);

// Collects bytes from a stream socket and cuts them into frames. A frame
// over `max_frame`, or not a whole number of words, is an error (the caller
// closes the connection). Thread-compatible.
class FrameReader {
 public:
  explicit FrameReader(size_t max_frame = kMaxFrame) : max_frame_(max_frame) {}
  void append(const std::byte* data, size_t n) { buffer_.insert(buffer_.end(), data, data + n); }
  // The next whole frame's message, nothing while it is incomplete.
  Result<std::optional<Message>> next();
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_frame_;
  std::vector<std::byte> buffer_;
};

// "host:port" into its parts; false for anything else.
bool split_address(const std::string& address, std::string* host, uint16_t* port);
// Comma-separated addresses (RGPU_POOL, --pool); an empty or malformed entry
// is an error naming it.
Result<std::vector<std::string>> parse_addresses(const std::string& list);

// A listening TCP socket (non-blocking, close-on-exec) and the address it is
// bound to (port 0 picks a free one).
Result<int> listen_on(const std::string& address, std::string* bound);

// A blocking TCP connection to one of the pool's peers: sends whole frames,
// receives them with a timeout. Owns its socket. Thread-compatible.
class Channel {
 public:
  // Tries each address in turn, each within `timeout`.
  static Result<std::unique_ptr<Channel>> connect(const std::vector<std::string>& addresses,
                                                  std::chrono::milliseconds timeout, size_t max_frame = kMaxFrame);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  Status send(capnp::MessageBuilder& message);
  // The next message, or nothing when none arrived within `timeout` (0:
  // only what is already here). A closed connection is a disconnected error.
  Result<std::optional<Message>> receive(std::chrono::milliseconds timeout);
  int fd() const { return fd_; }
  const std::string& address() const { return address_; }

 private:
  Channel(int fd, std::string address, size_t max_frame) : fd_(fd), address_(std::move(address)), reader_(max_frame) {}
  int fd_;
  std::string address_;
  FrameReader reader_;
};

}  // namespace rgpu::pool::net
