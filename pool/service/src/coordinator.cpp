// The service's one seam to the scheduler, and lease signing.
#include "coordinator.h"

#include "rgpu/pool/lease_token.h"

namespace rgpu::pool::service {

Coordinator::Coordinator(PoolConfig config, std::string key, std::unique_ptr<Clock> clock)
    : clock_(std::move(clock)), key_(std::move(key)), scheduler_(std::move(config), *clock_) {}

Result<std::string> Coordinator::sign(Lease lease) const {
  auto nonce = random_lease_nonce();
  if (!nonce.is_ok()) return nonce.status();
  lease.nonce = std::move(nonce.value());
  return sign_lease(lease, key_);
}

}  // namespace rgpu::pool::service
