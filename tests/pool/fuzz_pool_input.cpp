// Fuzzes what the pool reads from others: lease tokens (as rgpud reads a
// client's at hello) and pool.toml. The first byte picks: 'v' verifies the
// rest as a token; 's' signs the rest as a token body with the harness's
// key first, so the fuzzer reaches the parser behind the MAC; 'c' parses
// the rest as pool.toml (and its [history] table); 'h' reads the rest as a
// usage history file and makes its report, JSON and HTML. Anything may be
// refused; nothing may crash.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rgpu/pool/config.h"
#include "rgpu/pool/history.h"
#include "rgpu/pool/lease_token.h"
#include "rgpu/pool/report.h"

namespace {

constexpr std::string_view kKey = "fuzz key";

std::string hex_mac(std::string_view body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), kKey.data(), static_cast<int>(kKey.size()), reinterpret_cast<const unsigned char*>(body.data()),
       body.size(), mac, &len);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(digits[mac[i] >> 4]);
    out.push_back(digits[mac[i] & 15]);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  rgpu::pool::ReplayCache cache(4);
  rgpu::pool::VerifyOptions o;
  o.now = 1'200'000;
  o.replay = &cache;
  switch (data[0]) {
    case 'v': (void)rgpu::pool::verify_lease(rest, kKey, o); break;
    case 's': {
      const std::string token = std::string(rest) + "mac=" + hex_mac(rest) + "\n";
      auto first = rgpu::pool::verify_lease(token, kKey, o);
      auto second = rgpu::pool::verify_lease(token, kKey, o);
      // What verifies once is canonical and must not verify twice.
      if (first.is_ok() && (second.is_ok() || rgpu::pool::canonical_lease_text(first.value()) != rest)) __builtin_trap();
      break;
    }
    case 'c':
      (void)rgpu::pool::parse_config(rest);
      (void)rgpu::pool::parse_history_config(rest);
      break;
    case 'h': {
      rgpu::pool::HistoryRead read;
      rgpu::pool::read_history_text(rest, &read);
      for (const rgpu::pool::HistoryEvent& e : read.events) {
        // What decodes encodes to a line that decodes again.
        if (!rgpu::pool::decode_event(rgpu::pool::encode_event(e)).is_ok()) __builtin_trap();
      }
      rgpu::pool::ReportOptions ro;
      ro.since_ms = 3'600'000;
      auto r = rgpu::pool::make_report(read.events, ro);
      if (r.is_ok()) {
        (void)rgpu::pool::report_json(r.value());
        (void)rgpu::pool::report_html(r.value());
      }
      break;
    }
    default: break;
  }
  return 0;
}
