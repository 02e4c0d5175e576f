// Everything rgpu-pool asks of its scheduler, in one place: the service's
// event loop calls only this. Behind it stands either a Scheduler of its
// own (one pool instance) or an EtcdStore (several instances sharing the
// pool's state in etcd), and, when asked for, the usage history, which
// records what each call changed. Also signs the leases it grants.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pool_metrics.h"
#include "rgpu/pool/clock.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/etcd_store.h"
#include "rgpu/pool/history.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::service {

struct CoordinatorOptions {
  // Empty: a Scheduler of this process's own. Otherwise the etcd endpoints
  // of the shared state, with this instance's name and the pool's prefix.
  std::vector<std::string> etcd;
  EtcdStoreOptions store;
  // Set: the usage history is kept (path empty: in memory only).
  std::optional<HistoryOptions> history;
  // Set: what the scheduler does and holds is recorded there
  // (pool_metrics.h, docs/metrics.md). Not owned; it outlives the coordinator.
  metrics::Registry* metrics = nullptr;
};

// Thread-compatible: the service's one event-loop thread calls it.
class Coordinator {
 public:
  // `key`: the HMAC key shared with the servers (lease_token.h); not empty.
  // Fails when etcd cannot be reached or the history file cannot be opened.
  static Result<std::unique_ptr<Coordinator>> open(PoolConfig config, std::string key, std::unique_ptr<Clock> clock,
                                                   CoordinatorOptions options = {});
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  const PoolConfig& config() const { return config_; }
  Millis now() const { return clock_->now(); }

  Result<Changes> register_server(ServerInfo server);
  Result<Changes> heartbeat(std::string_view id, const std::vector<DeviceUse>& use);
  Result<Changes> remove_server(std::string_view id);
  Result<Submitted> submit(Request request);
  Status cancel(TicketId ticket);
  Result<Changes> release(LeaseId lease);
  Result<Lease> renew(LeaseId lease);
  Changes tick();

  // The signed token of a granted lease (a fresh nonce each time).
  Result<std::string> sign(Lease lease) const;

  std::optional<QueuePosition> position(TicketId t) const;
  std::optional<Lease> lease(LeaseId id) const;
  std::vector<Lease> leases() const;
  std::vector<ServerView> servers() const;
  std::vector<QueuedView> queue() const;

  // The usage history, or null when it is not kept.
  const History* history() const { return history_.get(); }
  bool shared() const { return store_ != nullptr; }
  // The history's lines (history.h's encoding) a report of the last
  // `since_ms` (0: all) needs: every event in that window, and before it
  // what states the window opens in (starts, servers, leases, the last
  // queue length). At most about `max_bytes`: past it the oldest lines are
  // left out and *truncated is set. Empty without a history.
  std::vector<std::string> history_lines(Millis since_ms, size_t max_bytes, bool* truncated) const;

 private:
  Coordinator(PoolConfig config, std::string key, std::unique_ptr<Clock> clock);
  // What a call changed, into the history: grants and ends, and the
  // tenant and wait of each request that timed out (from the queue as it
  // stood before the call).
  void record(const Changes& changes, const std::vector<QueuedView>& before);
  void record_queue();

  PoolConfig config_;
  std::unique_ptr<Clock> clock_;
  std::string key_;
  std::unique_ptr<Scheduler> scheduler_;  // exactly one of these two
  std::unique_ptr<EtcdStore> store_;
  std::unique_ptr<History> history_;
  std::unique_ptr<PoolMetrics> metrics_;
  Millis metrics_refreshed_ = 0;
};

}  // namespace rgpu::pool::service
