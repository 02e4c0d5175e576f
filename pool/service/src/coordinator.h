// Everything rgpu-pool asks of its scheduler, in one place: the service's
// event loop calls only this, so a shared state store (several pool
// instances over etcd) can stand behind these same calls later without
// touching the networking. Also signs the leases it grants.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/pool/clock.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::service {

// Thread-compatible: the service's one event-loop thread calls it.
class Coordinator {
 public:
  // `key`: the HMAC key shared with the servers (lease_token.h); not empty.
  Coordinator(PoolConfig config, std::string key, std::unique_ptr<Clock> clock);

  const PoolConfig& config() const { return scheduler_.config(); }
  Millis now() const { return clock_->now(); }

  Result<Changes> register_server(ServerInfo server) { return scheduler_.register_server(std::move(server)); }
  Result<Changes> heartbeat(std::string_view id, const std::vector<DeviceUse>& use) {
    return scheduler_.heartbeat(id, use);
  }
  Result<Changes> remove_server(std::string_view id) { return scheduler_.remove_server(id); }
  Result<Submitted> submit(Request request) { return scheduler_.submit(std::move(request)); }
  Status cancel(TicketId ticket) { return scheduler_.cancel(ticket); }
  Result<Changes> release(LeaseId lease) { return scheduler_.release(lease); }
  Result<Lease> renew(LeaseId lease) { return scheduler_.renew(lease); }
  Changes tick() { return scheduler_.tick(); }

  // The signed token of a granted lease (a fresh nonce each time).
  Result<std::string> sign(Lease lease) const;

  std::optional<QueuePosition> position(TicketId t) const { return scheduler_.position(t); }
  std::optional<Lease> lease(LeaseId id) const { return scheduler_.lease(id); }
  std::vector<Lease> leases() const { return scheduler_.leases(); }
  std::vector<ServerView> servers() const { return scheduler_.servers(); }
  std::vector<QueuedView> queue() const { return scheduler_.queue(); }

 private:
  std::unique_ptr<Clock> clock_;
  std::string key_;
  Scheduler scheduler_;
};

}  // namespace rgpu::pool::service
