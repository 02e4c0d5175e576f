// Lease tokens: canonical text, HMAC-SHA256 (OpenSSL), verification and
// the replay cache.
#include "rgpu/pool/lease_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <vector>

namespace rgpu::pool {
namespace {

constexpr std::string_view kMagic = "rgpu-lease-v1\n";
constexpr std::string_view kMacKey = "mac=";
constexpr size_t kMacBytes = 32;

bool token_word(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

bool unhex(std::string_view s, std::vector<unsigned char>* out) {
  if (s.size() % 2) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nib(s[i]), lo = nib(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<unsigned char>(hi << 4 | lo));
  }
  return true;
}

std::string mac_of(std::string_view key, std::string_view text) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

template <class T>
bool number(std::string_view s, T* out) {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() > 1 && s[0] == '0') return false;  // one spelling per value
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Reads "key=value\n" at the front of `text`.
bool field(std::string_view* text, std::string_view key, std::string_view* value) {
  if (text->substr(0, key.size()) != key || text->size() <= key.size() || (*text)[key.size()] != '=') return false;
  const size_t eol = text->find('\n');
  if (eol == std::string_view::npos) return false;
  *value = text->substr(key.size() + 1, eol - key.size() - 1);
  text->remove_prefix(eol + 1);
  return true;
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t sp = s.find(' ', start);
    const size_t end = sp == std::string_view::npos ? s.size() : sp;
    out.push_back(s.substr(start, end - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return out;
}

Result<Lease> parse_body(std::string_view text) {
  auto bad = [](const std::string& what) { return Status(ErrorKind::kInvalidArgument, "lease token: " + what); };
  if (text.substr(0, kMagic.size()) != kMagic) return bad("not an rgpu lease (version line)");
  text.remove_prefix(kMagic.size());
  Lease l;
  std::string_view v;
  if (!field(&text, "id", &v) || !number(v, &l.id)) return bad("bad id");
  if (!field(&text, "tenant", &v) || !token_word(v, kMaxTenantName)) return bad("bad tenant");
  l.tenant = std::string(v);
  if (!field(&text, "priority", &v)) return bad("bad priority");
  {
    auto p = parse_priority(v);
    if (!p.is_ok()) return bad("bad priority");
    l.priority = p.value();
  }
  if (!field(&text, "issued", &v) || !number(v, &l.issued)) return bad("bad issued time");
  if (!field(&text, "expiry", &v) || !number(v, &l.expiry)) return bad("bad expiry time");
  if (!field(&text, "nonce", &v) || !token_word(v, 128)) return bad("bad nonce");
  l.nonce = std::string(v);
  while (!text.empty()) {
    if (!field(&text, "device", &v)) return bad("bad device line");
    const auto parts = split_spaces(v);
    PlacedDevice d;
    uint32_t share = 0;
    if (parts.size() != 6 || !token_word(parts[0], 256) || !token_word(parts[1], 256) ||
        !number(parts[2], &d.device) || !number(parts[3], &d.slice) || !number(parts[4], &d.memory_bytes) ||
        !number(parts[5], &share) || share > kShareUnits) {
      return bad("bad device line");
    }
    d.server_id = std::string(parts[0]);
    if (parts[1] != "-") d.address = std::string(parts[1]);
    d.share = units_to_share(share);
    l.placement.push_back(std::move(d));
    if (l.placement.size() > kMaxDevicesPerRequest) return bad("too many devices");
  }
  if (l.placement.empty()) return bad("no devices");
  if (l.expiry <= l.issued) return bad("expiry before issue");
  return l;
}

}  // namespace

Result<std::string> random_lease_nonce() {
  unsigned char n[32];
  if (RAND_bytes(n, sizeof n) != 1) return failed("the system random generator failed");
  return hex(n, sizeof n);
}

std::string canonical_lease_text(const Lease& l) {
  std::string t(kMagic);
  t += "id=" + std::to_string(l.id) + "\n";
  t += "tenant=" + l.tenant + "\n";
  t += "priority=" + std::to_string(l.priority) + "\n";
  t += "issued=" + std::to_string(l.issued) + "\n";
  t += "expiry=" + std::to_string(l.expiry) + "\n";
  t += "nonce=" + l.nonce + "\n";
  for (const PlacedDevice& d : l.placement) {
    t += "device=" + d.server_id + " " + (d.address.empty() ? "-" : d.address) + " " + std::to_string(d.device) + " " +
         std::to_string(d.slice) + " " + std::to_string(d.memory_bytes) + " " +
         std::to_string(share_to_units(d.share)) + "\n";
  }
  return t;
}

Result<std::string> sign_lease(const Lease& l, std::string_view key) {
  if (key.empty()) return invalid_argument("lease signing: empty key");
  if (!token_word(l.nonce, 128)) return invalid_argument("lease signing: the lease has no nonce");
  if (!token_word(l.tenant, kMaxTenantName)) return invalid_argument("lease signing: bad tenant");
  if (l.placement.empty() || l.placement.size() > kMaxDevicesPerRequest) {
    return invalid_argument("lease signing: 1.." + std::to_string(kMaxDevicesPerRequest) + " devices expected");
  }
  if (l.issued < 0 || l.expiry <= l.issued) return invalid_argument("lease signing: bad times");
  for (const PlacedDevice& d : l.placement) {
    if (!token_word(d.server_id, 256) || !(d.address.empty() || token_word(d.address, 256))) {
      return invalid_argument("lease signing: server id or address with spaces or control characters");
    }
  }
  std::string text = canonical_lease_text(l);
  const std::string mac = mac_of(key, text);
  text += std::string(kMacKey) + hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size()) + "\n";
  return text;
}

Result<bool> ReplayCache::insert(LeaseId id, const std::string& nonce, Millis expiry, Millis now) {
  auto key = std::make_pair(id, nonce);
  if (by_key_.count(key)) return false;
  forget_expired(now);
  if (by_key_.size() >= capacity_) return overloaded("lease replay cache is full of unexpired leases");
  by_key_.emplace(key, expiry);
  by_expiry_.insert({expiry, key});
  return true;
}

void ReplayCache::forget_expired(Millis now) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    by_key_.erase(by_expiry_.begin()->second);
    by_expiry_.erase(by_expiry_.begin());
  }
}

Result<Lease> verify_lease(std::string_view token, std::string_view key, const VerifyOptions& o) {
  if (key.empty()) return invalid_argument("lease token: no key to verify with");
  if (token.size() > kMaxLeaseToken) return invalid_argument("lease token: longer than 16 KiB");
  // The MAC line is the last line; everything before it is signed.
  if (token.size() < kMacKey.size() + 2 * kMacBytes + 1 || token.back() != '\n') {
    return invalid_argument("lease token: truncated");
  }
  const size_t mac_at = token.size() - (kMacKey.size() + 2 * kMacBytes + 1);
  if (token.substr(mac_at, kMacKey.size()) != kMacKey || (mac_at > 0 && token[mac_at - 1] != '\n')) {
    return invalid_argument("lease token: no mac line");
  }
  std::vector<unsigned char> given;
  if (!unhex(token.substr(mac_at + kMacKey.size(), 2 * kMacBytes), &given)) {
    return invalid_argument("lease token: mac is not hex");
  }
  const std::string_view body = token.substr(0, mac_at);
  const std::string want = mac_of(key, body);
  if (given.size() != want.size() || CRYPTO_memcmp(given.data(), want.data(), want.size()) != 0) {
    return invalid_argument("lease token: signature does not match (forged or signed with another key)");
  }
  auto lease = parse_body(body);
  if (!lease.is_ok()) return lease.status();
  Lease& l = lease.value();
  if (canonical_lease_text(l) != body) return invalid_argument("lease token: not in canonical form");
  if (o.now >= l.expiry) return failed("lease token: lease " + std::to_string(l.id) + " has expired");
  if (o.now < l.issued - o.clock_skew_ms) {
    return failed("lease token: lease " + std::to_string(l.id) + " is issued in the future (clock skew?)");
  }
  if (o.replay) {
    auto fresh = o.replay->insert(l.id, l.nonce, l.expiry, o.now);
    if (!fresh.is_ok()) return fresh.status();
    if (!fresh.value()) return failed("lease token: lease " + std::to_string(l.id) + " was already presented");
  }
  return lease;
}

namespace {

std::string register_text(std::string_view id, std::string_view address, uint64_t boot_id, Millis time_ms) {
  std::string text = "rgpu-register-v1\nid=";
  text += id;
  text += "\naddress=";
  text += address;
  text += "\nboot=" + std::to_string(boot_id) + "\ntime=" + std::to_string(time_ms) + "\n";
  return text;
}

std::string request_text(const Request& r, std::string_view program, std::string_view hostname, Millis time_ms,
                         std::string_view nonce) {
  std::string text = "rgpu-pool-request-v1\ntenant=";
  text += r.tenant;
  text += "\ndevices=" + std::to_string(r.devices) + "\nmemory=" + std::to_string(r.memory_bytes) +
          "\nshare=" + std::to_string(share_to_units(r.share)) + "\nkind=" + kind_wanted_name(r.kind) +
          "\nmin_cc=" + std::to_string(r.min_compute_capability) + "\npriority=" + std::to_string(r.priority) +
          "\ntimeout=" + std::to_string(r.timeout_ms) + "\nprogram=";
  text += program;
  text += "\nhost=";
  text += hostname;
  text += "\ntime=" + std::to_string(time_ms) + "\nnonce=";
  text += nonce;
  text += "\n";
  return text;
}

std::string end_session_text(std::string_view server_id, LeaseId lease, std::string_view reason, Millis time_ms) {
  std::string text = "rgpu-end-session-v1\nserver=";
  text += server_id;
  text += "\nlease=" + std::to_string(lease) + "\nreason=";
  text += reason;
  text += "\ntime=" + std::to_string(time_ms) + "\n";
  return text;
}

// Whether `time_ms` is within `skew_ms` of `now` (read from `clock`); else
// the error, starting with `whose_time`.
Status fresh(const char* whose_time, const char* clock, Millis time_ms, Millis now, Millis skew_ms) {
  if (time_ms >= now - skew_ms && time_ms <= now + skew_ms) return Status::ok();
  return failed(std::string(whose_time) + " is " + std::to_string((time_ms - now) / 1000) + " s from " + clock +
                " (replayed, or clocks apart)");
}

// A MAC given as hex against the one expected, in constant time.
bool same_mac(std::string_view given_hex, const std::string& want) {
  std::vector<unsigned char> given;
  if (given_hex.size() != 2 * kMacBytes || !unhex(given_hex, &given)) return false;
  return given.size() == want.size() && CRYPTO_memcmp(given.data(), want.data(), want.size()) == 0;
}

}  // namespace

std::string request_proof(std::string_view secret, const Request& request, std::string_view program,
                          std::string_view hostname, Millis time_ms, std::string_view nonce) {
  const std::string mac = mac_of(secret, request_text(request, program, hostname, time_ms, nonce));
  return hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

Status verify_request_proof(std::string_view secret, std::string_view proof, const Request& request,
                            std::string_view program, std::string_view hostname, Millis time_ms,
                            std::string_view nonce, Millis now, Millis skew_ms) {
  if (proof.empty()) {
    return invalid_argument("the request carries no proof of tenant " + request.tenant +
                            "'s key (set RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE)");
  }
  if (nonce.size() < 32) return invalid_argument("the request's nonce is missing or too short");
  if (!same_mac(proof, mac_of(secret, request_text(request, program, hostname, time_ms, nonce)))) {
    return invalid_argument("the request's proof does not match tenant " + request.tenant + "'s key");
  }
  return fresh("the request's time", "the pool's clock", time_ms, now, skew_ms);
}

std::string end_session_proof(std::string_view key, std::string_view server_id, LeaseId lease,
                              std::string_view reason, Millis time_ms) {
  const std::string mac = mac_of(key, end_session_text(server_id, lease, reason, time_ms));
  return hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

Status verify_end_session_proof(std::string_view key, std::string_view proof, std::string_view server_id,
                                LeaseId lease, std::string_view reason, Millis time_ms, Millis now,
                                Millis skew_ms) {
  if (key.empty()) return invalid_argument("the order: no pool key to check it with");
  if (proof.empty()) return invalid_argument("the order carries no proof of the pool's key");
  if (!same_mac(proof, mac_of(key, end_session_text(server_id, lease, reason, time_ms)))) {
    return invalid_argument("the order's proof does not match (not the pool's key, or not for this server)");
  }
  return fresh("the order's time", "this server's clock", time_ms, now, skew_ms);
}

std::string register_proof(std::string_view key, std::string_view id, std::string_view address, uint64_t boot_id,
                           Millis time_ms) {
  const std::string mac = mac_of(key, register_text(id, address, boot_id, time_ms));
  return hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

Status verify_register_proof(std::string_view key, std::string_view proof, std::string_view id,
                             std::string_view address, uint64_t boot_id, Millis time_ms, Millis now,
                             Millis skew_ms) {
  if (key.empty()) return invalid_argument("registration: the pool has no key");
  if (proof.size() != 2 * kMacBytes) return invalid_argument("registration: no proof of the pool's key");
  if (!same_mac(proof, mac_of(key, register_text(id, address, boot_id, time_ms)))) {
    return invalid_argument("registration: the proof does not match (not the pool's key)");
  }
  return fresh("registration: its time", "the pool's clock", time_ms, now, skew_ms);
}

}  // namespace rgpu::pool
