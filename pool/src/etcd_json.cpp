// Base64 and the etcd gateway's JSON spellings.
#include "etcd_json.h"

#include <cstdlib>

namespace rgpu::pool::detail {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}
}  // namespace

std::string b64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(kAlphabet[(v >> (6 * k)) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> unb64(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value_of(c);
    if (v < 0) return invalid_argument("not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

int64_t i64(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return 0;
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    return end && *end == '\0' ? static_cast<int64_t>(v) : 0;
  }
  return 0;
}

Result<KeyValue> parse_kv(const nlohmann::json& kv) {
  if (!kv.is_object() || !kv.contains("key") || !kv["key"].is_string()) return failed("etcd key-value without a key");
  KeyValue out;
  Result<std::string> key = unb64(kv["key"].get<std::string>());
  if (!key.is_ok()) return failed("etcd key is not base64");
  out.key = std::move(key.value());
  if (kv.contains("value") && kv["value"].is_string()) {
    Result<std::string> value = unb64(kv["value"].get<std::string>());
    if (!value.is_ok()) return failed("etcd value is not base64");
    out.value = std::move(value.value());
  }
  out.create_revision = i64(kv, "create_revision");
  out.mod_revision = i64(kv, "mod_revision");
  out.version = i64(kv, "version");
  out.lease = i64(kv, "lease");
  return out;
}

}  // namespace rgpu::pool::detail
