// One pool instance among several that share the pool's state in etcd: a
// Scheduler whose every decision is made durable in etcd before it is
// reported, and whose view follows the other instances through a watch.
// Key layout, transactions and guarantees: docs/pool.md, "Several pool
// instances on etcd".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/clock.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/etcd_client.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool {

struct EtcdStoreOptions {
  // Every key of the pool lives under this prefix; pools sharing one etcd
  // use different prefixes.
  std::string prefix = "/rgpu/pool/";
  // This instance's name, unique among the pool's live instances.
  std::string instance = "pool";
  // false (tests): no watch; the view follows etcd only on sync() and on a
  // lost race, so a stale view can be arranged on purpose.
  bool watch = true;
};

struct EtcdStoreCounters {
  uint64_t committed = 0;  // grants made durable
  uint64_t conflicts = 0;  // grants or ends another instance got in before
  uint64_t reloads = 0;    // full reads of the pool's state
};

// The Scheduler's mutating calls, each answered only once etcd holds the
// outcome: grants are written in transactions that compare the revisions
// of the slices they take, so of two instances racing for one slice
// exactly one wins and the other re-plans. What the watch brings in
// (servers joining or leaving, claims made or released elsewhere) can
// place this instance's queued requests; those changes come back from the
// next mutating call other than heartbeat() (tick() at the latest).
// Thread-safe: one internal mutex around the scheduler; the watch and the
// instance's liveness renewal run on threads of their own. The clock must
// outlive the store.
class EtcdStore {
 public:
  // Registers the instance (a record kept alive by an etcd lease), reads
  // the pool's state and starts the watch.
  static Result<std::unique_ptr<EtcdStore>> open(PoolConfig config, const Clock& clock, EtcdOptions etcd,
                                                 EtcdStoreOptions options);
  // Stops the watch and revokes the instance's record. Servers' records
  // stay: their rgpud heartbeats to another instance.
  ~EtcdStore();
  EtcdStore(const EtcdStore&) = delete;
  EtcdStore& operator=(const EtcdStore&) = delete;

  // As Scheduler's, made durable. A heartbeat renews the server's etcd
  // lease, through whichever instance it reaches; it fails when that lease
  // has expired (the server must register again). Its Changes are always
  // empty, as on one instance: what the watch decided waits for another
  // call.
  Result<Changes> register_server(ServerInfo server);
  Result<Changes> heartbeat(std::string_view server_id, const std::vector<DeviceUse>& use);
  Result<Changes> remove_server(std::string_view server_id);
  Result<Submitted> submit(Request request);
  Status cancel(TicketId ticket);
  // Any instance may release or renew any lease (its client may have come
  // over from an instance that died).
  Result<Changes> release(LeaseId lease);
  Result<Lease> renew(LeaseId lease);
  // Ends what time has ended, retries what etcd could not take before, and
  // returns what the watch decided since the last call.
  Changes tick();
  // Reads the whole state from etcd now.
  Status sync();

  // Reads the scheduler under the store's lock; fn must not call the store.
  void read(const std::function<void(const Scheduler&)>& fn) const;
  std::optional<Lease> lease(LeaseId lease) const;
  std::vector<Lease> leases() const;
  std::vector<ServerView> servers() const;
  EtcdStoreCounters counters() const;
  // The first lease id of this instance's range.
  LeaseId first_lease_id() const;

 private:
  struct State;
  explicit EtcdStore(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace rgpu::pool
