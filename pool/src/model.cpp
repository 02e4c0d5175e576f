// Names, parsing and validation of the pool's plain values.
#include "rgpu/pool/model.h"

#include <charconv>
#include <cmath>
#include <set>

namespace rgpu::pool {
namespace {

bool printable_name(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

bool valid_share(double share) { return std::isfinite(share) && share >= 0.0 && share <= 1.0; }

}  // namespace

uint32_t share_to_units(double share) {
  if (!(share > 0.0)) return 0;
  if (share >= 1.0) return kShareUnits;
  return static_cast<uint32_t>(std::lround(share * kShareUnits));
}

double units_to_share(uint32_t units) { return static_cast<double>(units) / kShareUnits; }

const char* kind_wanted_name(KindWanted kind) {
  switch (kind) {
    case KindWanted::kNvidia: return "nvidia";
    case KindWanted::kCpu: return "cpu";
    case KindWanted::kAny: return "any";
  }
  return "?";
}

Result<KindWanted> parse_kind_wanted(std::string_view text) {
  if (text == "nvidia") return KindWanted::kNvidia;
  if (text == "cpu") return KindWanted::kCpu;
  if (text == "any") return KindWanted::kAny;
  return invalid_argument("device kind '" + std::string(text) + "': expected nvidia, cpu or any");
}

Result<int32_t> parse_priority(std::string_view text) {
  if (text == "low") return kPriorityLow;
  if (text == "normal") return kPriorityNormal;
  if (text == "high") return kPriorityHigh;
  int32_t value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || p != end || value < -1000 || value > 1000) {
    return invalid_argument("priority '" + std::string(text) + "': expected low, normal, high or -1000..1000");
  }
  return value;
}

Status validate(const Request& r) {
  if (r.devices == 0 || r.devices > kMaxDevicesPerRequest) {
    return invalid_argument("devices: " + std::to_string(r.devices) + " is outside 1.." +
                            std::to_string(kMaxDevicesPerRequest));
  }
  if (!valid_share(r.share)) return invalid_argument("share: expected a number in 0..1");
  if (!printable_name(r.tenant, kMaxTenantName)) {
    return invalid_argument("tenant: expected 1-64 printable characters without spaces");
  }
  if (r.priority < -1000 || r.priority > 1000) return invalid_argument("priority: outside -1000..1000");
  if (r.timeout_ms < 0) return invalid_argument("timeout: negative");
  return Status::ok();
}

Status validate(const ServerInfo& s) {
  if (!printable_name(s.id, 256)) return invalid_argument("server id: expected 1-256 printable characters");
  if (s.devices.empty()) return invalid_argument("server " + s.id + ": no devices");
  std::set<uint32_t> indices;
  for (const Device& d : s.devices) {
    const std::string at = "server " + s.id + " device " + std::to_string(d.index);
    if (!indices.insert(d.index).second) return invalid_argument(at + ": listed twice");
    if (d.kind.empty()) return invalid_argument(at + ": no kind");
    if (d.memory_bytes == 0) return invalid_argument(at + ": no memory");
    std::set<uint32_t> ids;
    uint64_t memory = 0;
    for (const Slice& sl : d.slices) {
      if (!ids.insert(sl.id).second) return invalid_argument(at + ": slice " + std::to_string(sl.id) + " listed twice");
      if (sl.memory_bytes == 0 || !valid_share(sl.share) || sl.share == 0.0) {
        return invalid_argument(at + ": slice " + std::to_string(sl.id) + " needs memory and a share in (0, 1]");
      }
      memory += sl.memory_bytes;
    }
    if (memory > d.memory_bytes) return invalid_argument(at + ": slices hold more memory than the device");
  }
  return Status::ok();
}

}  // namespace rgpu::pool
