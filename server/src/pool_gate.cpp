// Lease verification at hello, in pool mode.
#include "pool_gate.h"

#include <algorithm>
#include <chrono>

namespace rgpu::server {

void PoolLeaseGate::set_server_id(std::string id) {
  std::lock_guard<std::mutex> lock(mu_);
  server_id_ = std::move(id);
}

std::string PoolLeaseGate::server_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_id_;
}

Result<LeaseGrant> PoolLeaseGate::check(std::string_view token) {
  const pool::Millis now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::lock_guard<std::mutex> lock(mu_);
  pool::VerifyOptions options;
  options.now = now;
  options.replay = &replay_;
  auto lease = pool::verify_lease(token, key_, options);
  if (!lease.is_ok()) return lease.status();
  if (revoked_.count(lease.value().id) != 0) {
    return failed("lease " + std::to_string(lease.value().id) + " was ended by the pool; it admits no session");
  }
  LeaseGrant grant;
  grant.id = lease.value().id;
  grant.tenant = lease.value().tenant;
  for (const pool::PlacedDevice& p : lease.value().placement) {
    if (p.server_id != server_id_) continue;
    grant.slices.push_back(LeasedSlice{p.device, p.slice, p.memory_bytes, static_cast<float>(p.share)});
  }
  if (grant.slices.empty()) {
    return invalid_argument("lease " + std::to_string(grant.id) + " grants no device on this server (id " +
                            server_id_ + ")");
  }
  return grant;
}

void PoolLeaseGate::revoke(uint64_t lease) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = revoked_.begin(); it != revoked_.end();) {
    it = now - it->second > std::chrono::hours(24) ? revoked_.erase(it) : std::next(it);
  }
  if (revoked_.size() >= kMaxRevoked && revoked_.count(lease) == 0) {
    auto oldest = std::min_element(revoked_.begin(), revoked_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    revoked_.erase(oldest);
  }
  revoked_[lease] = now;
}

}  // namespace rgpu::server
