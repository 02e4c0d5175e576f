// The lease gate of pool mode: rgpu-pool's signed leases, verified with
// the shared key, this server's id and the wall clock.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "lease_gate.h"
#include "rgpu/pool/lease_token.h"

namespace rgpu::server {

// Verifies with the pool's shared key, this server's id and the wall clock,
// admitting each lease once (a replay cache). Thread-safe.
class PoolLeaseGate final : public LeaseGate {
 public:
  PoolLeaseGate(std::string key, std::string server_id) : key_(std::move(key)), server_id_(std::move(server_id)) {}
  // The id is fixed once the listener is bound (it may name the bound port);
  // call before registering with the pool.
  void set_server_id(std::string id);
  std::string server_id() const;
  Result<LeaseGrant> check(std::string_view token) override;
  // The pool ended `lease` (released, preempted, expired): from now on it
  // admits no session here, whatever its expiry says. Remembered for a day
  // (a lease's term is far shorter), at most kMaxRevoked at once (the
  // oldest forgotten first).
  void revoke(uint64_t lease);
  static constexpr size_t kMaxRevoked = 65536;

 private:
  const std::string key_;
  mutable std::mutex mu_;
  std::string server_id_;
  pool::ReplayCache replay_;
  std::map<uint64_t, std::chrono::steady_clock::time_point> revoked_;
};

}  // namespace rgpu::server
