// Signed leases: what the pool hands a client and the client shows each
// server at hello. A token is the lease's canonical text followed by an
// HMAC-SHA256 of that text under a key the pool and its servers share.
// The format is specified in docs/pool.md ("Lease tokens").
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool {

// Longest token verify() reads; anything longer is refused unread.
constexpr size_t kMaxLeaseToken = 16 * 1024;

// A fresh random nonce (32 bytes from the system generator, as hex).
Result<std::string> random_lease_nonce();

// The canonical text of a lease: one "key=value" per line in a fixed order,
// numbers in decimal, shares in units of 1/10000. The same lease always
// gives the same bytes.
std::string canonical_lease_text(const Lease& lease);

// The token for a lease, which must carry a nonce (random_lease_nonce).
// `key` is the shared secret; an empty key or nonce is an error.
Result<std::string> sign_lease(const Lease& lease, std::string_view key);

// A server's proof, when it registers, that it holds the key (`key`) the
// pool signs leases with: HMAC-SHA256 of "rgpu-register-v1", its id, the
// address clients use, its boot id and `time_ms`, its wall clock then (hex,
// 64 characters). verify_register_proof compares in constant time and wants
// `time_ms` within `skew_ms` of `now`; errors say which check failed.
std::string register_proof(std::string_view key, std::string_view id, std::string_view address, uint64_t boot_id,
                           Millis time_ms);
Status verify_register_proof(std::string_view key, std::string_view proof, std::string_view id,
                             std::string_view address, uint64_t boot_id, Millis time_ms, Millis now,
                             Millis skew_ms = 30'000);

// A client's proof, when it asks for devices, that it holds its tenant's
// key (`secret`, the one it proves to rgpud): HMAC-SHA256 of
// "rgpu-pool-request-v1", every field of the request, the program and host
// it names, `time_ms` (its wall clock) and `nonce` (hex, fresh per request),
// as hex. verify_request_proof compares in constant time and wants `time_ms`
// within `skew_ms` of `now`; the caller refuses a nonce seen before
// (ReplayCache). Errors say which check failed.
std::string request_proof(std::string_view secret, const Request& request, std::string_view program,
                          std::string_view hostname, Millis time_ms, std::string_view nonce);
Status verify_request_proof(std::string_view secret, std::string_view proof, const Request& request,
                            std::string_view program, std::string_view hostname, Millis time_ms,
                            std::string_view nonce, Millis now, Millis skew_ms = 30'000);

// The pool's proof on an order to server `server_id` to end `lease`'s
// sessions: HMAC-SHA256 under the pool's key of "rgpu-end-session-v1", the
// server, the lease, the reason and `time_ms` (the pool's wall clock), as
// hex. verify_end_session_proof wants `time_ms` within `skew_ms` of `now`.
std::string end_session_proof(std::string_view key, std::string_view server_id, LeaseId lease,
                              std::string_view reason, Millis time_ms);
Status verify_end_session_proof(std::string_view key, std::string_view proof, std::string_view server_id,
                                LeaseId lease, std::string_view reason, Millis time_ms, Millis now,
                                Millis skew_ms = 30'000);

// Remembers the leases already presented, so each is admitted once. Entries
// are forgotten once their lease has expired, when expired leases are
// refused anyway. Thread-compatible.
class ReplayCache {
 public:
  explicit ReplayCache(size_t capacity = 65536) : capacity_(capacity) {}
  // Records (id, nonce) unless present; false when it was already seen.
  // When full of unexpired entries it refuses (returns an overloaded error)
  // rather than forget one that could then be replayed.
  Result<bool> insert(LeaseId id, const std::string& nonce, Millis expiry, Millis now);
  size_t size() const { return by_key_.size(); }

 private:
  void forget_expired(Millis now);

  size_t capacity_;
  std::map<std::pair<LeaseId, std::string>, Millis> by_key_;
  std::set<std::pair<Millis, std::pair<LeaseId, std::string>>> by_expiry_;
};

// Checks a token presented by a client: the MAC under `key` (compared in
// constant time), the form of every field, that `now` lies in
// [issued - skew, expiry), and, with a cache, that it was not presented
// before. Returns the lease it grants. Every failure is an error return
// saying which check failed (kInvalidArgument for forged or malformed,
// kFailed for expired or replayed), never a crash.
struct VerifyOptions {
  Millis now = 0;
  Millis clock_skew_ms = 30'000;
  ReplayCache* replay = nullptr;  // not owned; null: no replay check
};
Result<Lease> verify_lease(std::string_view token, std::string_view key, const VerifyOptions& options);

}  // namespace rgpu::pool
