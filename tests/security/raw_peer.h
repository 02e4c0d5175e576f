// A hand-driven connection to rgpud over rgpu's UCX transport: it sends any
// bytes the test makes (well-formed or not) and records what comes back, so
// attacks are written message by message instead of through the client.
#pragma once

#include <capnp/message.h>
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/protocol/auth.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/transport/transport.h"

namespace rgpu::security {

using namespace std::chrono_literals;

// Typed handles as a client mints them (rgpu/protocol/handles.h): the n-th
// of its kind, so tests name them by small numbers.
inline uint64_t minted(protocol::HandleKind kind, uint64_t n) {
  return protocol::make_handle(kind, protocol::kFirstMintedSerial + n);
}
inline uint64_t S(uint64_t n) { return minted(protocol::HandleKind::kStream, n); }
inline uint64_t E(uint64_t n) { return minted(protocol::HandleKind::kEvent, n); }
inline uint64_t M(uint64_t n) { return minted(protocol::HandleKind::kModule, n); }
inline uint64_t F(uint64_t n) { return minted(protocol::HandleKind::kFunction, n); }
inline uint64_t C(uint64_t n) { return minted(protocol::HandleKind::kContext, n); }

// What the server did with a message that wanted an answer.
struct Answer {
  enum class Kind {
    kReply,      // a Reply to the sync call
    kChallenge,  // a Challenge
    kWelcome,    // an accepted Welcome
    kRefused,    // a refusing Welcome (the connection closes after it)
    kClosed,     // the connection closed with no answer
    kTimeout,    // nothing within the time limit
  };
  Answer() = default;
  explicit Answer(Kind k) : kind(k) {}
  Kind kind = Kind::kTimeout;
  // kReply
  CUresult result = CUDA_SUCCESS;
  CUresult async_error = CUDA_SUCCESS;
  std::vector<uint64_t> values;
  std::vector<uint8_t> bytes;
  std::string message;  // kReply: the detail; kRefused: the reason
  // kChallenge
  std::vector<uint8_t> server_nonce;
  // kWelcome
  std::vector<uint8_t> server_proof;
  std::string tenant;
  // kWelcome and kRefused: the version of the session (refused: the
  // server's newest) and the server's range; kWelcome: the common features
  // and the devices granted.
  uint32_t protocol_version = 0;
  uint32_t min_protocol_version = 0;
  uint32_t max_protocol_version = 0;
  uint64_t features = 0;
  uint32_t granted_devices = 0;

  bool closed_or_refused() const { return kind == Kind::kClosed || kind == Kind::kRefused; }
  std::string describe() const;
};

// One connection. Thread-safe: the transport's thread queues what arrives,
// the test thread reads it. Every wait is bounded.
class RawPeer {
 public:
  using Fill = std::function<void(wire::Call::Builder)>;

  // Connects to `address`; null when the transport refuses (which counts as
  // refused for the attacks that expect it).
  static std::unique_ptr<RawPeer> connect(transport::Transport& transport, const std::string& address);
  ~RawPeer();

  // From now on, bulk bytes that arrive beside a message are never taken
  // from the transport (a client that stops reading its results); the
  // message itself is recorded as before, with no payload bytes.
  void stop_reading_payloads() { hold_payloads_ = true; }
  // How many payloads were left untaken so far.
  size_t payloads_held();
  // Takes the payloads left untaken, in the order they came, and reads every
  // later one at once again.
  std::vector<std::vector<uint8_t>> take_held_payloads();

  // Sends bytes as a header, and `payload` beside them. False when the
  // connection is already closed.
  bool send(const std::vector<std::byte>& header, transport::Bytes payload = {});
  // The next handshake answer or the reply to call `id` (0: any reply), skipping
  // what else the server sends (device output, copy completions).
  Answer wait(uint64_t id = 0, std::chrono::milliseconds limit = 5000ms);
  // Waits until the connection is closed; true when it was within the limit.
  bool wait_closed(std::chrono::milliseconds limit = 5000ms);
  bool closed();

  // Handshake messages.
  static std::vector<std::byte> hello(const std::string& tenant, const protocol::auth::Nonce& nonce,
                                      const std::string& program = "attacker");
  // A hello that speaks protocol versions [oldest, newest] (oldest 0: a hello
  // from before ranges) with `features`.
  static std::vector<std::byte> hello(const std::string& tenant, const protocol::auth::Nonce& nonce, uint32_t oldest,
                                      uint32_t newest, uint64_t features = 0);
  static std::vector<std::byte> authenticate(const std::vector<uint8_t>& proof);

  // The whole handshake as the client does it, checking the server's proof.
  struct Handshake {
    bool welcomed = false;
    bool server_proof_ok = false;
    Answer last;
    protocol::auth::Nonce client_nonce{};
    std::vector<uint8_t> server_nonce;
    protocol::auth::Proof proof{};
  };
  // With `hello_bytes` (from hello()) instead of the default hello; its
  // nonce must be `nonce`.
  Handshake handshake(const std::string& tenant, const std::string& secret);
  Handshake handshake(const std::string& tenant, const std::string& secret, const std::vector<std::byte>& hello_bytes,
                      const protocol::auth::Nonce& nonce);

  // A batch of calls with ids from this peer's sequence, all in context
  // `ctx`; the last call's id is in *last_id.
  std::vector<std::byte> batch(uint64_t ctx, const std::vector<Fill>& fills, uint64_t* last_id);
  // Sends a batch whose last call is sync and waits for its answer.
  Answer calls(uint64_t ctx, const std::vector<Fill>& fills, transport::Bytes payload = {});
  Answer call(uint64_t ctx, const Fill& fill, transport::Bytes payload = {}) { return calls(ctx, {fill}, payload); }
  // Sends async calls only (no answer to wait for).
  bool post(uint64_t ctx, const std::vector<Fill>& fills);

  // Conveniences over calls() for a session's set-up; each fails the
  // calling test (ADD_FAILURE) when the server says no.
  static constexpr uint64_t kCtx = protocol::primary_context(0);
  // Retains the context kCtx (device 0's primary context).
  bool open_context();
  uint64_t alloc(uint64_t size);
  bool write(uint64_t ptr, const std::vector<uint8_t>& data);
  std::vector<uint8_t> read(uint64_t ptr, uint64_t size);
  // The device's free bytes as cuMemGetInfo tells this session; 0 when the
  // server says no.
  uint64_t free_device_bytes();
  // Loads kKernelsPtx as module `handle` and its kernel `name` as `function`
  // (typed handles: M(n) and F(n)).
  bool load_kernels(uint64_t module, uint64_t function, const std::string& name);
  // Launches `function` on one thread with `params`; then synchronizes the
  // context and returns that answer.
  Answer launch_and_sync(uint64_t function, const std::vector<uint8_t>& params);

 private:
  RawPeer() = default;
  void on_message(transport::Message message);
  void on_closed();

  std::shared_ptr<transport::Connection> connection_;
  std::mutex mu_;
  std::condition_variable cv_;
  struct Arrived {
    transport::Message message;                  // the bytes `decoded` reads from
    std::unique_ptr<protocol::Decoded> decoded;  // null: undecodable
    std::vector<uint8_t> payload;                // its bulk bytes, received at once
  };
  std::deque<Arrived> inbox_;
  std::atomic<bool> hold_payloads_{false};
  std::vector<std::unique_ptr<transport::IncomingPayload>> held_;  // guarded by mu_
  bool closed_ = false;
  uint64_t next_id_ = 1;
};

}  // namespace rgpu::security
