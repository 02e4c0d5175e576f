// Authentication of a session: the proofs both sides compute over the hello's
// and the challenge's nonces, and the keys (tenant and secret) they use.
// See docs/security.md for the exchange and why it is shaped this way.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rgpu/common/status.h"

namespace rgpu::protocol::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;
// Longest tenant name and secret accepted from a file, the environment or
// the wire; tenant names are printable ASCII without spaces.
constexpr size_t kMaxTenant = 64;
constexpr size_t kMaxSecret = 4096;
constexpr const char* kDefaultTenant = "default";
// The identity an operator's proofs are made for, with the server's admin
// key. It has a space, which no tenant name may have (valid_tenant), so no
// tenant's proof is ever an operator's, even under the same secret.
constexpr const char* kAdminIdentity = "rgpu admin";

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Fresh random bytes from the operating system's generator (OpenSSL
// RAND_bytes). Fails only when the system has no entropy to give.
Result<Nonce> random_nonce();

// HMAC-SHA256 proofs. The client's and the server's differ in their label,
// so neither can be replayed as the other; both bind the tenant and both
// nonces, so a proof is good for one connection only.
Proof client_proof(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce);
Proof server_proof(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce);

// The keys of per-message integrity (transport/sealed.h), one per direction:
// HMAC-SHA256 as the proofs, under labels of their own, so no proof is a key
// and neither direction's key is the other's.
struct SealKeys {
  std::array<uint8_t, 32> client_to_server;
  std::array<uint8_t, 32> server_to_client;
};
SealKeys seal_keys(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce);

// Compares in time that depends only on the lengths, never on the contents.
bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b);

// Whether `tenant` is a valid name: 1..kMaxTenant printable ASCII characters
// other than space.
bool valid_tenant(std::string_view tenant);

// A secret with its surrounding white space (a trailing newline in a file)
// removed; an error when empty or longer than kMaxSecret.
Result<std::string> clean_secret(std::string_view text, const std::string& where);

// Reads a whole small file (at most 64 KiB): secrets come from files or the
// environment, never from a command line, where every local user can read
// them. Refuses a file that other users may read, naming the fix (chmod 600).
Result<std::string> read_secret_file(const std::string& path);
// One secret from a private file (read_secret_file, then clean_secret).
Result<std::string> read_key_file(const std::string& path);

// Whether `host` (as in --listen) names only this machine: 127.0.0.0/8,
// ::1 or "localhost". rgpud and rgpu-pool listen without keys only there
// (or when told --insecure).
bool is_loopback_host(const std::string& host);

// The keys a server accepts, by tenant. Immutable once built; thread-safe.
class KeyRing {
 public:
  // One secret for the default tenant.
  static Result<KeyRing> single(std::string_view secret);
  // A key file: one "TENANT SECRET" per line (or a lone "SECRET" line for
  // the default tenant); blank lines and lines starting with '#' are skipped.
  static Result<KeyRing> parse(std::string_view text, const std::string& where);

  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }
  // The secret of `tenant`, if it has one.
  std::optional<std::string_view> find(std::string_view tenant) const;

 private:
  std::map<std::string, std::string, std::less<>> keys_;
};

}  // namespace rgpu::protocol::auth
