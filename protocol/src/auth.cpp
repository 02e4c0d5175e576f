// Session authentication: HMAC-SHA256 proofs over both nonces (OpenSSL's
// libcrypto), constant-time comparison and key files.
#include "rgpu/protocol/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace rgpu::protocol::auth {
namespace {

// HMAC-SHA256(secret, label || 0 || tenant || 0 || client_nonce || server_nonce).
// The NULs keep the fields apart: no tenant name can shift bytes into a label.
Proof proof(std::string_view label, std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
            const Nonce& server_nonce) {
  std::string input;
  input.reserve(label.size() + tenant.size() + 2 + 2 * kNonceBytes);
  input.append(label);
  input.push_back('\0');
  input.append(tenant);
  input.push_back('\0');
  input.append(reinterpret_cast<const char*>(client_nonce.data()), client_nonce.size());
  input.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
  Proof out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), out.data(), &len);
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<Nonce> random_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) return failed("the system random generator failed");
  return n;
}

Proof client_proof(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce) {
  return proof("rgpu-client-v1", secret, tenant, client_nonce, server_nonce);
}

Proof server_proof(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce) {
  return proof("rgpu-server-v1", secret, tenant, client_nonce, server_nonce);
}

SealKeys seal_keys(std::string_view secret, std::string_view tenant, const Nonce& client_nonce,
                   const Nonce& server_nonce) {
  return SealKeys{proof("rgpu-seal-c2s-v1", secret, tenant, client_nonce, server_nonce),
                  proof("rgpu-seal-s2c-v1", secret, tenant, client_nonce, server_nonce)};
}

bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool valid_tenant(std::string_view tenant) {
  if (tenant.empty() || tenant.size() > kMaxTenant) return false;
  for (char c : tenant) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

Result<std::string> clean_secret(std::string_view text, const std::string& where) {
  std::string_view s = trim(text);
  if (s.empty()) return invalid_argument(where + ": the secret is empty");
  if (s.size() > kMaxSecret) return invalid_argument(where + ": the secret is longer than 4096 bytes");
  return std::string(s);
}

Result<std::string> read_key_file(const std::string& path) {
  auto text = read_secret_file(path);
  if (!text.is_ok()) return text.status();
  return clean_secret(text.value(), path);
}

Result<std::string> read_secret_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + " is not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    return invalid_argument(path + " may be read by other users; make it private with: chmod 600 " + path);
  }
  constexpr size_t kMaxFile = 64 * 1024;
  if (static_cast<uint64_t>(st.st_size) > kMaxFile) {
    ::close(fd);
    return invalid_argument(path + " is larger than 64 KiB");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

Result<KeyRing> KeyRing::single(std::string_view secret) {
  auto clean = clean_secret(secret, "the token");
  if (!clean.is_ok()) return clean.status();
  KeyRing ring;
  ring.keys_.emplace(kDefaultTenant, std::move(clean.value()));
  return ring;
}

Result<KeyRing> KeyRing::parse(std::string_view text, const std::string& where) {
  KeyRing ring;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string at = where + ":" + std::to_string(line_no);
    std::string_view tenant = kDefaultTenant;
    std::string_view secret = line;
    const size_t space = line.find_first_of(" \t");
    if (space != std::string_view::npos) {
      tenant = line.substr(0, space);
      secret = trim(line.substr(space));
    }
    if (!valid_tenant(tenant)) return invalid_argument(at + ": bad tenant name (1-64 printable characters, no spaces)");
    auto clean = clean_secret(secret, at);
    if (!clean.is_ok()) return clean.status();
    if (!ring.keys_.emplace(std::string(tenant), std::move(clean.value())).second) {
      return invalid_argument(at + ": tenant " + std::string(tenant) + " appears twice");
    }
  }
  if (ring.keys_.empty()) return invalid_argument(where + ": no keys");
  return ring;
}

std::optional<std::string_view> KeyRing::find(std::string_view tenant) const {
  auto it = keys_.find(tenant);
  if (it == keys_.end()) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace rgpu::protocol::auth
