// Private to the etcd store: what one instance knows of etcd (the latest
// revision of each pool key it has seen, with the record parsed), and the
// steps that keep that view, the scheduler and etcd in step.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "etcd_records.h"
#include "rgpu/pool/etcd_store.h"

namespace rgpu::pool {

struct EtcdStore::State {
  State(PoolConfig c, const Clock& k, EtcdOptions e, EtcdStoreOptions o)
      : config(c), clock(k), etcd(e), options(std::move(o)), sched(std::move(c), k) {}

  const PoolConfig config;
  const Clock& clock;
  EtcdClient etcd;
  const EtcdStoreOptions options;

  mutable std::mutex mu;  // everything below
  Scheduler sched;

  // --- what this instance has seen of etcd, by key ---
  struct ServerEntry {
    int64_t rev = 0;
    detail::ServerRecord record;
  };
  struct LeaseEntry {
    int64_t rev = 0;
    Lease lease;
  };
  struct SliceEntry {
    int64_t rev = 0;
    std::vector<detail::SliceHold> holds;
  };
  std::map<std::string, ServerEntry> servers;  // by server id
  std::map<LeaseId, LeaseEntry> leases;
  std::map<std::string, SliceEntry> slices;   // by key
  // Keys this instance deleted or saw deleted, with the revision of the
  // delete, so a late event from before it is not applied.
  std::map<std::string, int64_t> deleted;
  // Events at or below this revision were folded in by the last reload.
  int64_t floor = 0;

  // --- this instance's own ---
  int64_t instance_lease = 0;
  LeaseId first_lease = 1;
  std::set<std::string> registered;  // server ids the scheduler holds
  std::set<LeaseId> served;           // leases granted or renewed here
  struct Asked {
    Request request;
    Millis since = 0;
  };
  std::unordered_map<TicketId, Asked> asked;  // this instance's tickets
  std::set<LeaseId> unerased;  // ended here, not yet erased from etcd
  Changes work;   // decided by the scheduler, not yet durable
  Changes ready;  // durable, not yet handed to the caller
  EtcdStoreCounters counters;

  // The watch only queues what it reads, so its stream is always drained:
  // a stream left unread while this instance waits on etcd would stall the
  // gateway's shared connection, and with it the answer being waited for.
  // The applier thread applies the queue under `mu`.
  std::unique_ptr<EtcdWatch> watch;
  std::mutex inbox_mu;  // inbox, resume_from
  std::condition_variable inbox_cv;
  std::deque<WatchBatch> inbox;
  bool stopping_inbox = false;
  int64_t resume_from = 0;  // set by the applier after a reload for a compacted watch
  std::thread applier;
  void apply_batches();
  std::thread renewer;
  std::condition_variable renewer_cv;
  bool stopping = false;

  // --- keys ---
  std::string server_key(const std::string& id) const { return options.prefix + "servers/" + id; }
  std::string lease_key(LeaseId id) const { return options.prefix + "leases/" + std::to_string(id); }
  std::string slice_key(const PlacedDevice& p) const {
    return options.prefix + "slices/" + p.server_id + "/" + std::to_string(p.device) + "/" + std::to_string(p.slice);
  }
  std::string instance_key() const { return options.prefix + "instances/" + options.instance; }

  // --- the view (etcd_store_view.cpp) ---
  int64_t known_rev(const std::string& key) const;
  // One event, from the watch or a reload; what the scheduler decides
  // because of it goes to `work`.
  void apply(const std::string& key, int64_t rev, bool deleted_now, const std::string& value);
  // Reads the whole state and applies what differs from the view.
  Status reload();
  void put_server(const std::string& id, int64_t rev, const std::string& value);
  void drop_server(const std::string& id, int64_t rev);
  void put_lease(LeaseId id, int64_t rev, const std::string& value);
  void drop_lease(LeaseId id, int64_t rev);
  // Adopts the recorded leases the scheduler does not hold yet.
  void reconcile();
  void absorb(Changes ch);

  // --- making decisions durable (etcd_store.cpp) ---
  void settle();
  // kOk: durable. `conflict` set: another instance got there first.
  Status commit_grant(const Lease& lease, bool* conflict);
  Status erase_lease(LeaseId id, EndReason reason);
  void refresh_servers();
  Changes take_ready();
};

}  // namespace rgpu::pool
