// Encoding and decoding of rgpu wire messages (Envelope, see protocol/rgpu.capnp).
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu.capnp.h"

namespace rgpu::protocol {

// First segment size for builders of small messages (replies, control
// messages, a batch that may hold one call): 1 KiB instead of Cap'n Proto's
// 8 KiB default, which would be zeroed for every message. Larger messages
// grow in further segments.
constexpr unsigned kSmallMessageWords = 128;

// Makes `call` the generic record of a generated call (Call.invoke): which
// API and function, its packed arguments (args.h), whether it wants a reply.
inline void set_invoke(wire::Call::Builder call, wire::Api api, uint32_t function, std::span<const std::byte> args,
                       bool wants_reply) {
  auto invoke = call.initInvoke();
  invoke.setApi(api);
  invoke.setFunction(function);
  invoke.setArgs(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(args.data()), args.size()));
  call.setWantsReply(wants_reply);
}

// Serialises a built message into one contiguous buffer (Cap'n Proto flat-array
// framing), ready to be a transport header.
kj::Array<capnp::word> encode(capnp::MessageBuilder& message);
std::span<const std::byte> as_bytes(const kj::Array<capnp::word>& words);

// A decoded message. Owns (or borrows, see decode) the bytes it reads from.
// Thread-compatible: readers obtained from it are valid while it lives.
class Decoded {
 public:
  wire::Envelope::Reader envelope() const { return root_; }

 private:
  friend Result<std::unique_ptr<Decoded>> decode(std::span<const std::byte> bytes);
  kj::Array<capnp::word> aligned_copy_;  // used when the input was not word aligned
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  wire::Envelope::Reader root_;
};

// Decodes a header received from a peer. The bytes must outlive the result
// unless they were not 8-byte aligned (then they are copied). The whole
// message is walked once here, so later field access cannot fail: malformed
// input (bad framing, bad pointers, exceeded limits) is an invalid-argument
// error, never a crash or an exception.
Result<std::unique_ptr<Decoded>> decode(std::span<const std::byte> bytes);

}  // namespace rgpu::protocol
