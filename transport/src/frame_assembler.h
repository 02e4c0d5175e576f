// The receive side of the UCX framing, without UCX: checks each frame against
// the wire rules and the connection's receive limits, holds frames that
// arrive out of order, pairs split headers with their payloads and yields
// whole messages in sequence order. Fuzzed by tests/transport/fuzz_frames.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/transport/transport.h"
#include "wire.h"

namespace rgpu::transport::ucx {

// An eager payload copied out of the transport's buffer on arrival.
class CopiedPayload final : public IncomingPayload {
 public:
  CopiedPayload(const void* data, size_t size);
  size_t size() const override { return data_.size(); }
  Status receive(void* dst) override;

 private:
  std::vector<std::byte> data_;
  bool taken_ = false;
};

// One arrived frame's bytes after its Frame prefix. Only read during feed().
struct FrameBytes {
  const std::byte* header = nullptr;  // user header carried in the AM header
  size_t header_len = 0;
  const std::byte* data = nullptr;  // AM data when eager; unused when rndv
  size_t length = 0;                // AM data bytes
  bool rndv = false;                // AM data left at the sender (rendezvous)
};

// Where whole messages go. Called from inside feed() and header_fetched().
class AssemblerSink {
 public:
  virtual ~AssemblerSink() = default;
  // The next message in sequence order; seq is its last frame's. `bytes`
  // count against max_parked_bytes until FrameAssembler::release(bytes).
  virtual void deliver(uint64_t seq, Message message, size_t bytes) = 0;
  // The peer's bye, after everything it sent before: nothing follows.
  virtual void peer_bye() = 0;
};

// Makes the payload object of a frame whose payload stays at the sender.
// feed() calls take() at most once, and only for a frame it keeps.
class RndvSource {
 public:
  virtual ~RndvSource() = default;
  virtual std::unique_ptr<IncomingPayload> take() = 0;
};

// What feed() did. When payload_kept, the frame's rendezvous data belongs to
// the assembler whatever the status (the transport must not free it). When
// fetch_header, the status is ok and the caller fetches the header (length
// bytes) and hands it to header_fetched().
struct FeedResult {
  Status status;
  bool fetch_header = false;
  bool payload_kept = false;
};

// One connection's receive side. Not thread-safe: one thread feeds it (the
// UCX progress role). After an error it refuses every frame; reset() drops
// whatever it still holds.
class FrameAssembler {
 public:
  FrameAssembler(AssemblerSink& sink, const ReceiveLimits& limits) : sink_(sink), limits_(limits) {}
  FrameAssembler(const FrameAssembler&) = delete;
  FrameAssembler& operator=(const FrameAssembler&) = delete;

  // Applies to frames fed from now on; what is held counts against them.
  void set_limits(const ReceiveLimits& limits) { limits_ = limits; }
  const ReceiveLimits& limits() const { return limits_; }

  FeedResult feed(const Frame& frame, const FrameBytes& bytes, RndvSource* rndv);
  // The header of `seq` (a fetch_header frame) arrived; yields what it completes.
  Status header_fetched(uint64_t seq, std::vector<std::byte> header);
  // A delivered message was handed to the application: its bytes stop counting.
  void release(size_t bytes) { pending_bytes_ -= bytes < pending_bytes_ ? bytes : pending_bytes_; }
  // Drops every held frame and count (the connection closed).
  void reset();

  bool failed() const { return !error_.is_ok(); }
  const Status& error() const { return error_; }
  // The sequence number the next delivered message starts at.
  uint64_t next_seq() const { return next_; }
  // Frames held until those before them arrive (or their header is fetched).
  uint64_t parked_frames() const { return parked_.size(); }
  // Bytes counted against max_parked_bytes: parked frames, a header waiting
  // for its payload, and delivered messages not yet released.
  uint64_t held_bytes() const { return parked_bytes_ + held_header_.size() + pending_bytes_; }

 private:
  struct Slot {
    bool ready = false;  // false while its header is fetched
    uint32_t flags = 0;
    size_t bytes = 0;
    Message message;
  };

  Status fail(Status status);
  // Hands out `slot` (seq == next_) and then every ready slot that follows.
  Status deliver(uint64_t seq, Slot slot);
  Status drain();

  AssemblerSink& sink_;
  ReceiveLimits limits_;
  Status error_;
  uint64_t next_ = 0;
  bool ended_ = false;  // the bye was delivered
  std::map<uint64_t, Slot> parked_;
  uint64_t parked_bytes_ = 0;
  bool holding_header_ = false;  // a kHeaderPart waits for its kHeaderFromPrev
  std::vector<std::byte> held_header_;
  uint64_t pending_bytes_ = 0;
};

}  // namespace rgpu::transport::ucx
