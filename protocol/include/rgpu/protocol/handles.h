// Typed handles: how the client names the objects it creates (contexts,
// streams, events, modules, functions, library handles) on the wire.
//
// A handle is 64 bits: the top byte is its kind, the rest a serial the client
// minted. The kind travels with every handle, so the server checks that a
// call gets the kind it expects (a stream where a stream belongs) before it
// looks the handle up in the session's own table, and the values that mean
// something special are spelled here once instead of guessed on each side:
//   - 0 is "no handle" (no current context, for instance);
//   - the NULL stream, the legacy stream and the per-thread stream are
//     stream handles with serials 0, 1 and 2;
//   - the primary context of device d is the context handle with serial
//     1 + d (at most kMaxDevices devices);
//   - serials the client mints start at kFirstMintedSerial;
//   - bits 48..55 of a serial name the server (of several a client uses)
//     the handle belongs to, 0 for the first; see "Server tags" below;
//   - a handle a library hands the program as an int (a cuFFT plan) keeps
//     the serial's low 24 bits and the server above (see "Int form").
#pragma once

#include <cstdint>

namespace rgpu::protocol {

enum class HandleKind : uint8_t {
  kNone = 0,
  kContext = 1,
  kStream = 2,
  kEvent = 3,
  kModule = 4,
  kFunction = 5,
  kLibrary = 6,
  kKernel = 7,
  // Graphs built node by node, their nodes and their executable graphs:
  // objects of the client's runtime (client-shim/src/runtime/graph_nodes.cpp),
  // never sent. Graphs made by stream capture are rgpud's.
  kGraph = 8,
  kGraphNode = 9,
  kGraphExec = 10,
  // Handles of remoted libraries (cuBLAS, cuDNN, ...) follow from 16; their
  // kinds are named in the API descriptions (api/*.api) and listed in
  // protocol/generated/handle_kinds.h.
  kFirstLibraryKind = 16,
};

constexpr int kHandleKindShift = 56;
constexpr uint64_t kHandleSerialMask = (uint64_t{1} << kHandleKindShift) - 1;
constexpr uint64_t kMaxDevices = 254;
constexpr uint64_t kFirstMintedSerial = 0x100;

constexpr uint64_t make_handle(HandleKind kind, uint64_t serial) {
  return (static_cast<uint64_t>(kind) << kHandleKindShift) | (serial & kHandleSerialMask);
}
constexpr HandleKind kind_of(uint64_t handle) { return static_cast<HandleKind>(handle >> kHandleKindShift); }
constexpr uint64_t serial_of(uint64_t handle) { return handle & kHandleSerialMask; }
constexpr bool is_kind(uint64_t handle, HandleKind kind) { return handle != 0 && kind_of(handle) == kind; }

// The special streams.
constexpr uint64_t kNullStream = make_handle(HandleKind::kStream, 0);
constexpr uint64_t kLegacyStream = make_handle(HandleKind::kStream, 1);
constexpr uint64_t kPerThreadStream = make_handle(HandleKind::kStream, 2);
constexpr bool is_special_stream(uint64_t handle) {
  return kind_of(handle) == HandleKind::kStream && serial_of(handle) < 3;
}

// Primary contexts: one fixed handle per device.
constexpr uint64_t primary_context(uint64_t device) { return make_handle(HandleKind::kContext, 1 + device); }
constexpr bool is_primary_context(uint64_t handle) {
  return kind_of(handle) == HandleKind::kContext && serial_of(handle) >= 1 && serial_of(handle) <= kMaxDevices;
}
constexpr uint64_t primary_context_device(uint64_t handle) { return serial_of(handle) - 1; }

// Whether `handle` is one a client may mint (not a special or reserved value).
constexpr bool is_minted(uint64_t handle) {
  return kind_of(handle) != HandleKind::kNone && serial_of(handle) >= kFirstMintedSerial;
}

// Server tags. The client mints every handle from one counter, so a serial
// is unique across servers by itself; the tag only lets a call find its
// server without a lookup. Server 0's handles have no tag: with one server
// every value is what it would be without it. Servers treat a minted handle
// as opaque and accept the tagged value; only the primary contexts, whose
// fixed values spell the server's device ordinal, travel untagged.
constexpr int kServerShift = 48;
constexpr uint64_t kServerMask = uint64_t{0xff} << kServerShift;
constexpr uint64_t kMaxServers = 0xff;

constexpr uint64_t with_server(uint64_t handle, uint64_t server) {
  return handle == 0 ? 0 : (handle & ~kServerMask) | ((server & 0xff) << kServerShift);
}
constexpr uint64_t server_of(uint64_t handle) { return (handle & kServerMask) >> kServerShift; }
constexpr uint64_t without_server(uint64_t handle) { return handle & ~kServerMask; }

// Int form, for library handles the program holds as a C int: the serial's
// low 24 bits and the server in the 7 bits above, so the int is never
// negative. A handle whose serial or server does not fit has none (a
// process that minted 2^24 handles of any kind gets no new ones).
constexpr int kIntSerialBits = 24;
constexpr uint64_t kIntSerialLimit = uint64_t{1} << kIntSerialBits;
constexpr uint64_t kIntServerLimit = 128;

constexpr bool to_int_form(uint64_t handle, int32_t* out) {
  const uint64_t serial = serial_of(without_server(handle));
  const uint64_t server = server_of(handle);
  if (serial >= kIntSerialLimit || server >= kIntServerLimit) return false;
  *out = static_cast<int32_t>((server << kIntSerialBits) | serial);
  return true;
}
constexpr uint64_t from_int_form(HandleKind kind, int32_t value) {
  const auto v = static_cast<uint32_t>(value);
  return with_server(make_handle(kind, v & (kIntSerialLimit - 1)), v >> kIntSerialBits);
}

}  // namespace rgpu::protocol
