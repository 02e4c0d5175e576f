// The lease gate of pool mode: rgpu-pool's signed leases, verified with
// the shared key, this server's id and the wall clock.
#pragma once

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

 private:
  const std::string key_;
  mutable std::mutex mu_;
  std::string server_id_;
  pool::ReplayCache replay_;
};

}  // namespace rgpu::server
