// The server's dispatch of generated calls (Call.invoke): one row per
// function of each remoted API, generated from its description
// (api/*.api, docs/api-description.md) into server/generated/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "call_env.h"
#include "rgpu.capnp.h"

namespace rgpu::server {

// The result of one generated call, to be put into a Reply.
struct InvokeOutcome {
  wire::Api api = wire::Api::DRIVER;
  uint32_t code = 0;             // the API's status code (0: success in every API rgpu remotes)
  std::vector<std::byte> out;    // out-arguments, packed as the description lays them out
  std::string message;           // a detail for logs, when refused
};

struct DispatchRow {
  const char* name;              // e.g. "cuMemGetInfo_v2"
  wire::Api api;
  uint32_t function;             // ordinal in the API's lock file
  bool sync;                     // the client waits for a reply
  // Never waits for device work and names no per-thread stream (`quick` in
  // the description): the server may run it on the transport's thread the
  // moment it arrives, as it does the typed calls of that kind.
  bool quick;
  // Decodes and validates `args` against `env`, runs the call, encodes the
  // out-arguments. Never throws; undecodable or invalid arguments are the
  // API's invalid-value code with a message.
  InvokeOutcome (*run)(CallEnv& env, std::span<const std::byte> args);
  // A quick call that names a stream: the index of the stream's 8-byte item
  // in `args` (-1: none). Naming the per-thread stream, which is a thread's
  // own, it runs on the session's executor instead.
  int stream_item = -1;
};

// The row for (api, function), or null when this server does not know it.
const DispatchRow* find_row(wire::Api api, uint32_t function);

// The code of each API that means "not supported" and "invalid value", for
// answers the dispatcher gives itself.
uint32_t not_supported_code(wire::Api api);
uint32_t invalid_value_code(wire::Api api);

// The driver API's rows (server/generated/driver_dispatch.cpp): by ordinal,
// and the i-th in table order (null past the end), for tests and fuzzers.
const DispatchRow* find_driver_row(uint32_t function);
const DispatchRow* find_driver_row_at(size_t i);

// Helpers of the generated rows.
namespace dispatch {

// A refusal: `code` of `api`, with a message for the log.
InvokeOutcome refuse(wire::Api api, uint32_t code, std::string message);

}  // namespace dispatch

}  // namespace rgpu::server
