// What the two sides of a session agree on at the handshake: the protocol
// version (each side speaks a range; the session runs at the highest version
// in both) and the optional features both have. See docs/protocol.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rgpu.capnp.h"

namespace rgpu::protocol {

// Feature bits (Hello.features, Welcome.features). A bit names a capability
// that a build may or may not have within one protocol version; the welcome
// carries the bits both sides have, and neither side uses a feature outside
// them. Bits are append-only, like field ordinals.
enum Feature : uint64_t {
  // Bulk bytes travel as the transport payload beside the header
  // (Call.payloadBytes, Reply.payloadBytes) instead of inline only.
  kFeatureBulkPayload = uint64_t{1} << 0,
  // Handles carry their kind in the top byte (rgpu/protocol/handles.h).
  kFeatureTypedHandles = uint64_t{1} << 1,
  // The server runs generated calls sent as Call.invoke.
  kFeatureInvoke = uint64_t{1} << 2,
  // The side can seal every message after the handshake
  // (rgpu/transport/sealed.h; Hello.integrity, Challenge.integrity).
  kFeatureIntegrity = uint64_t{1} << 3,
};

// The features this build implements, on either side. A bit is added here
// by the change that makes both the client and the server speak it.
constexpr uint64_t kBuildFeatures = kFeatureBulkPayload | kFeatureTypedHandles | kFeatureInvoke | kFeatureIntegrity;

// Per-message integrity after the handshake (transport/sealed.h): rgpud's
// --integrity and the client's RGPU_INTEGRITY. kAuto: on unless the peer is
// on this host (loopback, or in process); kOn: always (a client insists, a
// server refuses clients that cannot); kOff: never (a client that insists is
// refused). It needs keys: a server without authentication has none.
enum class IntegrityMode { kAuto, kOn, kOff };

// "auto", "on" or "off" (also "1"/"0", "yes"/"no", "true"/"false").
inline std::optional<IntegrityMode> parse_integrity_mode(std::string_view text) {
  if (text == "auto" || text.empty()) return IntegrityMode::kAuto;
  if (text == "on" || text == "1" || text == "yes" || text == "true") return IntegrityMode::kOn;
  if (text == "off" || text == "0" || text == "no" || text == "false") return IntegrityMode::kOff;
  return std::nullopt;
}

// An inclusive range of protocol versions.
struct VersionRange {
  uint32_t min = 0;
  uint32_t max = 0;

  bool valid() const { return min != 0 && min <= max; }
  bool contains(uint32_t v) const { return min <= v && v <= max; }
  // "3" or "3 to 7", for messages.
  std::string describe() const {
    return min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
  }
};

// The versions this build speaks.
constexpr VersionRange kBuildVersions{wire::MIN_PROTOCOL_VERSION, wire::PROTOCOL_VERSION};

// A peer's range as its message states it: the newest version and, since
// protocol 3, the oldest. A message without the oldest (0: a build from
// before ranges) speaks exactly its one version.
inline VersionRange stated_range(uint32_t newest, uint32_t oldest) {
  return oldest == 0 ? VersionRange{newest, newest} : VersionRange{oldest, newest};
}

// The highest version in both ranges; nothing when they do not meet or
// either is malformed.
inline std::optional<uint32_t> highest_common(VersionRange a, VersionRange b) {
  if (!a.valid() || !b.valid()) return std::nullopt;
  const uint32_t high = std::min(a.max, b.max);
  if (high < std::max(a.min, b.min)) return std::nullopt;
  return high;
}

}  // namespace rgpu::protocol
