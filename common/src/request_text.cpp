// Sizes and resource requests written as text.
#include "rgpu/common/request_text.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace rgpu {
namespace {

bool digits_to_u64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::string lower(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<uint64_t> parse_size(std::string_view text) {
  const auto bad = [&] {
    return invalid_argument("'" + std::string(text) +
                            "' is not a size: give bytes, or a number with K, M, G or T (e.g. 512M, 2G)");
  };
  size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  uint64_t value = 0;
  if (!digits_to_u64(text.substr(0, n), &value)) return bad();
  const std::string unit = lower(text.substr(n));
  unsigned shift = 0;
  if (!unit.empty()) {
    switch (unit[0]) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      case 'b': break;
      default: return bad();
    }
    const std::string rest = unit.substr(1);
    const bool plain_bytes = unit[0] == 'b';
    if (plain_bytes ? !rest.empty() : !(rest.empty() || rest == "b" || rest == "ib")) return bad();
  }
  if (shift != 0 && value > (UINT64_MAX >> shift)) {
    return invalid_argument("'" + std::string(text) + "' is more bytes than fit in 64 bits");
  }
  return value << shift;
}

Result<float> parse_share(std::string_view text) {
  // Digits, at most one point, more digits: no sign, exponent, inf or nan.
  bool point = false, digit = false;
  for (char c : text) {
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else {
      digit = false;
      break;
    }
  }
  const double v = digit && text.size() < 32 ? std::strtod(std::string(text).c_str(), nullptr) : -1;
  if (!(v > 0 && v <= 1)) {
    return invalid_argument("'" + std::string(text) + "' is not a share: a decimal number above 0 and at most 1");
  }
  return static_cast<float>(v);
}

Result<RequestText> parse_request(std::string_view text) {
  RequestText request;
  bool seen_devices = false, seen_mem = false, seen_share = false;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return invalid_argument("request item '" + std::string(item) +
                              "' is not KEY=VALUE (expected devices=N,mem=SIZE,share=F)");
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "devices") {
      uint64_t n = 0;
      if (seen_devices) return invalid_argument("request names devices= twice");
      if (!digits_to_u64(value, &n) || n == 0 || n > UINT32_MAX) {
        return invalid_argument("request item '" + std::string(item) + "': devices wants a whole number from 1");
      }
      request.devices = static_cast<uint32_t>(n);
      seen_devices = true;
    } else if (key == "mem") {
      if (seen_mem) return invalid_argument("request names mem= twice");
      auto bytes = parse_size(value);
      if (!bytes.is_ok()) return invalid_argument("request item '" + std::string(item) + "': " + bytes.status().message());
      if (bytes.value() == 0) return invalid_argument("request item '" + std::string(item) + "': mem must be above 0");
      request.memory_bytes = bytes.value();
      seen_mem = true;
    } else if (key == "share") {
      if (seen_share) return invalid_argument("request names share= twice");
      auto share = parse_share(value);
      if (!share.is_ok()) return invalid_argument("request item '" + std::string(item) + "': " + share.status().message());
      request.share = share.value();
      seen_share = true;
    } else {
      return invalid_argument("request item '" + std::string(item) + "': unknown key '" + std::string(key) +
                              "' (this build knows devices=, mem= and share=)");
    }
  }
  return request;
}

}  // namespace rgpu
