// The pool's model (model.h) to and from its wire form (protocol/pool.capnp).
// Readers take untrusted messages: every text is bounded and checked, and a
// malformed field is an invalid-argument error naming it, never an
// exception that escapes or an assert.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pool.capnp.h"
#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool::wire {

// Longest id, address, kind, program or host name the pool reads.
constexpr size_t kMaxName = 256;
constexpr uint32_t kMaxDevicesPerServer = 1024;
constexpr uint32_t kMaxSlicesPerDevice = 1024;

void write(poolwire::Device::Builder out, const Device& device);
void write(poolwire::Register::Builder out, const ServerInfo& server);
// Sets a written registration's timeMs to `now` and its proof under `key`
// (register_proof, lease_token.h), over the id, address and boot id already
// in it.
void sign(poolwire::Register::Builder out, std::string_view key, Millis now);
void write(poolwire::Request::Builder out, const Request& request);
// Sets a written request's timeMs to `now`, a fresh nonce and its proof
// under the tenant's `secret` (request_proof, lease_token.h), over
// `request` and the program and host name already in it.
Status sign(poolwire::Request::Builder out, const Request& request, std::string_view secret, Millis now);
// Checks a request's proof against the tenant's `secret` (the caller then
// refuses a nonce it has seen: the returned one).
Result<std::string> verify(poolwire::Request::Reader in, const Request& request, std::string_view secret, Millis now);
// Signs an order to `server_id` (a LeaseEnd with its lease and reason
// set) under the pool's `key` at `now` (end_session_proof, lease_token.h).
void sign(poolwire::LeaseEnd::Builder out, std::string_view key, std::string_view server_id, Millis now);
// Checks an order received by `server_id` against the pool's `key`.
Status verify(poolwire::LeaseEnd::Reader in, std::string_view key, std::string_view server_id, Millis now);
void write(poolwire::PlacedDevice::Builder out, const PlacedDevice& placed);
void write_placement(capnp::List<poolwire::PlacedDevice>::Builder out, const Placement& placement);

// Bounded text; an error naming `what` when too long or not terminated.
Result<std::string> read_text(capnp::Text::Reader text, const char* what, size_t max = kMaxName);
Result<Device> read(poolwire::Device::Reader in);
Result<ServerInfo> read(poolwire::Register::Reader in);
// The request's fields (the scheduler's validate() checks their ranges).
Result<Request> read(poolwire::Request::Reader in);
Result<PlacedDevice> read(poolwire::PlacedDevice::Reader in);
Result<Placement> read_placement(capnp::List<poolwire::PlacedDevice>::Reader in);

}  // namespace rgpu::pool::wire
