// The etcd store: the scheduler's calls, each made durable in etcd before
// it is answered, and the instance's own liveness.
#include "rgpu/pool/etcd_store.h"

#include <algorithm>
#include <chrono>

#include "etcd_store_state.h"
#include "rgpu/common/log.h"

namespace rgpu::pool {

using detail::SliceHold;

namespace {

// Rounds of commit, lost race and reload one call goes through before it
// leaves the rest queued for the next call.
constexpr int kSettleRounds = 8;
// Lease ids: an instance's range starts at the etcd revision of its
// registration shifted by this many bits, so ranges never meet (2^24
// grants per instance lifetime).
constexpr int kLeaseIdBits = 24;

int64_t ttl_seconds(Millis ms) { return std::max<int64_t>(2, (ms + 999) / 1000); }

}  // namespace

// --- making decisions durable ---

Status EtcdStore::State::commit_grant(const Lease& lease, bool* conflict) {
  std::vector<EtcdCompare> cmp;
  std::vector<EtcdOp> ops;
  using T = EtcdCompare::Target;
  // The lease id is new; every server is as this instance saw it (not
  // gone, not registered again); every slice is as it saw it.
  cmp.push_back({lease_key(lease.id), T::kModRevision, EtcdCompare::Result::kEqual, 0, {}});
  std::set<std::string> compared;
  for (const PlacedDevice& p : lease.placement) {
    auto srv = servers.find(p.server_id);
    if (srv == servers.end()) {
      *conflict = true;
      return Status::ok();
    }
    if (compared.insert(p.server_id).second) {
      cmp.push_back({server_key(p.server_id), T::kModRevision, EtcdCompare::Result::kEqual, srv->second.rev, {}});
    }
    const std::string key = slice_key(p);
    auto sl = slices.find(key);
    std::vector<SliceHold> holds = sl == slices.end() ? std::vector<SliceHold>{} : sl->second.holds;
    cmp.push_back({key, T::kModRevision, EtcdCompare::Result::kEqual, sl == slices.end() ? 0 : sl->second.rev, {}});
    // The check that makes a slice impossible to grant twice: the record
    // etcd holds, plus this grant, must fit the slice. The scheduler's view
    // only proposes.
    Slice spec;
    const SliceHold add{lease.id, p.memory_bytes, share_to_units(p.share)};
    if (!detail::find_slice(srv->second.record.info, p.device, p.slice, &spec) || !detail::holds_fit(spec, holds, add)) {
      *conflict = true;
      return Status::ok();
    }
    holds.push_back(add);
    ops.push_back(EtcdOp::put(key, detail::encode_holds(holds)));
  }
  ops.push_back(EtcdOp::put(lease_key(lease.id), detail::encode_lease(lease, options.instance)));
  Result<TxnResult> r = etcd.txn(cmp, ops);
  if (!r.is_ok()) return r.status();
  if (!r.value().succeeded) {
    *conflict = true;
    return Status::ok();
  }
  const int64_t rev = r.value().revision;
  for (const PlacedDevice& p : lease.placement) {
    const std::string key = slice_key(p);
    SliceEntry& e = slices[key];
    e.rev = rev;
    e.holds.push_back({lease.id, p.memory_bytes, share_to_units(p.share)});
    deleted.erase(key);
  }
  leases[lease.id] = {rev, lease};
  deleted.erase(lease_key(lease.id));
  counters.committed += 1;
  return Status::ok();
}

Status EtcdStore::State::erase_lease(LeaseId id, EndReason reason) {
  for (int attempt = 0; attempt < kSettleRounds; ++attempt) {
    auto it = leases.find(id);
    if (it == leases.end()) return Status::ok();  // already erased, here or elsewhere
    const Lease recorded = it->second.lease;
    if (reason == EndReason::kExpired && recorded.expiry > clock.now()) {
      // Renewed elsewhere after this instance saw it expire: it lives.
      (void)sched.adopt(recorded);
      return Status::ok();
    }
    using T = EtcdCompare::Target;
    std::vector<EtcdCompare> cmp{{lease_key(id), T::kModRevision, EtcdCompare::Result::kEqual, it->second.rev, {}}};
    std::vector<EtcdOp> ops{EtcdOp::erase(lease_key(id))};
    std::map<std::string, std::vector<SliceHold>> after;
    for (const PlacedDevice& p : recorded.placement) {
      const std::string key = slice_key(p);
      auto sl = slices.find(key);
      cmp.push_back({key, T::kModRevision, EtcdCompare::Result::kEqual, sl == slices.end() ? 0 : sl->second.rev, {}});
      if (sl == slices.end()) continue;
      std::vector<SliceHold> rest;
      for (const SliceHold& h : sl->second.holds) {
        if (h.lease != id) rest.push_back(h);
      }
      ops.push_back(rest.empty() ? EtcdOp::erase(key) : EtcdOp::put(key, detail::encode_holds(rest)));
      after[key] = std::move(rest);
    }
    Result<TxnResult> r = etcd.txn(cmp, ops);
    if (!r.is_ok()) return r.status();
    if (r.value().succeeded) {
      const int64_t rev = r.value().revision;
      leases.erase(id);
      deleted[lease_key(id)] = rev;
      for (auto& [key, rest] : after) {
        if (rest.empty()) {
          slices.erase(key);
          deleted[key] = rev;
        } else {
          slices[key] = {rev, std::move(rest)};
        }
      }
      // A reload on the way may have adopted it again; it is gone now.
      if (sched.lease(id)) {
        Result<Changes> ch = sched.release(id);
        if (ch.is_ok()) absorb(std::move(ch.value()));
      }
      return Status::ok();
    }
    counters.conflicts += 1;
    Status s = reload();
    if (!s.is_ok()) return s;
  }
  return overloaded("lease " + std::to_string(id) + " kept changing while it was being erased");
}

void EtcdStore::State::refresh_servers() {
  // A server's liveness is its etcd lease: while its record exists it is
  // alive, whichever instance its heartbeats reach.
  for (const std::string& id : registered) (void)sched.heartbeat(id, {});
}

void EtcdStore::State::settle() {
  for (int round = 0; round < kSettleRounds; ++round) {
    if (work.granted.empty() && work.ended.empty() && work.timed_out.empty()) break;
    Changes ch = std::move(work);
    work = Changes{};
    for (TicketId t : ch.timed_out) {
      if (asked.erase(t)) ready.timed_out.push_back(t);
    }
    for (EndedLease& e : ch.ended) {
      RGPU_DEBUG("pool etcd lease ended lease=%llu reason=%s", static_cast<unsigned long long>(e.lease.id),
                 end_reason_name(e.reason));
      Status s = erase_lease(e.lease.id, e.reason);
      if (!s.is_ok()) {
        RGPU_WARN("pool etcd lease end not written lease=%llu error=%s",
                  static_cast<unsigned long long>(e.lease.id), s.to_string().c_str());
        unerased.insert(e.lease.id);
      }
      if (served.erase(e.lease.id)) ready.ended.push_back(std::move(e));
    }
    bool lost = false;
    Status down;
    for (Grant& g : ch.granted) {
      bool conflict = false;
      if (down.is_ok()) down = commit_grant(g.lease, &conflict);
      if (down.is_ok() && !conflict) {
        served.insert(g.lease.id);
        asked.erase(g.ticket);
        ready.granted.push_back(std::move(g));
        continue;
      }
      // Not durable: the request waits again, as if never placed.
      if (conflict) counters.conflicts += 1;
      lost = lost || conflict;
      auto a = asked.find(g.ticket);
      if (a != asked.end()) {
        (void)sched.requeue(g.lease.id, g.ticket, a->second.request, a->second.since);
      } else {
        // Its ticket is gone (cancelled meanwhile): nothing waits for it.
        Result<Changes> freed = sched.release(g.lease.id);
        if (freed.is_ok()) absorb(std::move(freed.value()));
      }
    }
    if (!down.is_ok()) {
      RGPU_WARN("pool etcd grant not written error=%s", down.to_string().c_str());
      break;  // etcd is away; the next call tries again
    }
    if (!lost) continue;
    // Another instance got there first: take in what it did, then let the
    // scheduler place the waiting requests again.
    if (!reload().is_ok()) break;
    refresh_servers();
    absorb(sched.tick());
  }
  // Whatever is left waits for the next call.
  for (const Grant& g : work.granted) {
    auto a = asked.find(g.ticket);
    if (a != asked.end()) (void)sched.requeue(g.lease.id, g.ticket, a->second.request, a->second.since);
  }
  work.granted.clear();
}

void EtcdStore::State::apply_batches() {
  for (;;) {
    std::deque<WatchBatch> batches;
    {
      std::unique_lock<std::mutex> lock(inbox_mu);
      inbox_cv.wait(lock, [this] { return !inbox.empty() || stopping_inbox; });
      if (stopping_inbox) return;
      batches.swap(inbox);
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const WatchBatch& b : batches) {
      if (b.compacted) {
        // History the watch needed is gone: read everything again.
        while (!reload().is_ok()) {
          std::lock_guard<std::mutex> in(inbox_mu);
          if (stopping_inbox) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::lock_guard<std::mutex> in(inbox_mu);
        resume_from = floor + 1;
        inbox_cv.notify_all();
        continue;
      }
      for (const WatchEvent& e : b.events) apply(e.kv.key, e.kv.mod_revision, e.deleted, e.kv.value);
      // Tombstones older than what the watch has delivered can no longer
      // shadow a late event.
      for (auto it = deleted.begin(); it != deleted.end();) {
        it = it->second <= b.revision ? deleted.erase(it) : std::next(it);
      }
    }
    settle();
  }
}

Changes EtcdStore::State::take_ready() {
  Changes out = std::move(ready);
  ready = Changes{};
  return out;
}

// --- the store ---

EtcdStore::EtcdStore(std::unique_ptr<State> s) : s_(std::move(s)) {}

EtcdStore::~EtcdStore() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stopping = true;
  }
  s_->renewer_cv.notify_all();
  {
    std::lock_guard<std::mutex> lock(s_->inbox_mu);
    s_->stopping_inbox = true;
  }
  s_->inbox_cv.notify_all();
  s_->watch.reset();
  if (s_->applier.joinable()) s_->applier.join();
  if (s_->renewer.joinable()) s_->renewer.join();
  if (s_->instance_lease) (void)s_->etcd.revoke_lease(s_->instance_lease);
}

Result<std::unique_ptr<EtcdStore>> EtcdStore::open(PoolConfig config, const Clock& clock, EtcdOptions etcd,
                                                   EtcdStoreOptions options) {
  if (options.prefix.empty() || options.prefix.back() != '/') return invalid_argument("etcd prefix must end in '/'");
  if (options.instance.empty() || options.instance.find('/') != std::string::npos) {
    return invalid_argument("instance name must be non-empty, without '/'");
  }
  const EtcdOptions watch_options = etcd;
  auto s = std::make_unique<State>(std::move(config), clock, std::move(etcd), std::move(options));
  const int64_t ttl = ttl_seconds(s->config.heartbeat_timeout_ms);
  Result<int64_t> lease = s->etcd.grant_lease(ttl);
  if (!lease.is_ok()) return lease.status();
  s->instance_lease = lease.value();
  Result<int64_t> rev = s->etcd.put(s->instance_key(), "{\"started\":" + std::to_string(clock.now()) + "}", lease.value());
  if (!rev.is_ok()) return rev.status();
  s->first_lease = static_cast<LeaseId>(rev.value()) << kLeaseIdBits;
  s->sched.set_next_lease_id(s->first_lease);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    Status st = s->reload();
    if (!st.is_ok()) return st;
    s->settle();
  }
  State* raw = s.get();
  raw->renewer = std::thread([raw, ttl] {
    std::unique_lock<std::mutex> lock(raw->mu);
    while (!raw->stopping) {
      raw->renewer_cv.wait_for(lock, std::chrono::milliseconds(ttl * 1000 / 3));
      if (raw->stopping) break;
      const int64_t id = raw->instance_lease;
      lock.unlock();
      Result<int64_t> k = raw->etcd.keep_alive(id);
      if (!k.is_ok()) RGPU_WARN("pool etcd instance lease not renewed error=%s", k.status().to_string().c_str());
      lock.lock();
    }
  });
  if (raw->options.watch) {
    raw->applier = std::thread([raw] { raw->apply_batches(); });
    raw->watch = std::make_unique<EtcdWatch>(watch_options, raw->options.prefix, raw->floor + 1,
                                             [raw](const WatchBatch& b) -> int64_t {
      std::unique_lock<std::mutex> lock(raw->inbox_mu);
      raw->inbox.push_back(b);
      raw->inbox_cv.notify_all();
      if (!b.compacted) return 0;
      // The stream is gone anyway: wait for the reload and go on from it.
      raw->inbox_cv.wait(lock, [raw] { return raw->resume_from > 0 || raw->stopping_inbox; });
      const int64_t from = raw->resume_from;
      raw->resume_from = 0;
      return from;
    });
  }
  RGPU_INFO("pool etcd instance open name=%s prefix=%s first_lease=%llu", raw->options.instance.c_str(),
            raw->options.prefix.c_str(), static_cast<unsigned long long>(raw->first_lease));
  return std::unique_ptr<EtcdStore>(new EtcdStore(std::move(s)));
}

Result<Changes> EtcdStore::register_server(ServerInfo server) {
  Status v = validate(server);
  if (!v.is_ok()) return v;
  std::lock_guard<std::mutex> lock(s_->mu);
  Result<int64_t> lease = s_->etcd.grant_lease(ttl_seconds(s_->config.heartbeat_timeout_ms));
  if (!lease.is_ok()) return lease.status();
  detail::ServerRecord rec{server, lease.value()};
  Result<int64_t> rev = s_->etcd.put(s_->server_key(server.id), detail::encode_server(rec), lease.value());
  if (!rev.is_ok()) return rev.status();
  // Applied as any instance applies it when the watch brings it.
  s_->apply(s_->server_key(server.id), rev.value(), false, detail::encode_server(rec));
  s_->settle();
  return s_->take_ready();
}

Result<Changes> EtcdStore::heartbeat(std::string_view server_id, const std::vector<DeviceUse>& use) {
  std::lock_guard<std::mutex> lock(s_->mu);
  auto it = s_->servers.find(std::string(server_id));
  if (it == s_->servers.end()) return failed("server " + std::string(server_id) + " is not registered");
  Result<Changes> ch = s_->sched.heartbeat(server_id, use);
  if (!ch.is_ok()) return ch.status();
  Result<int64_t> k = s_->etcd.keep_alive(it->second.record.etcd_lease);
  if (!k.is_ok()) return k.status();
  s_->absorb(std::move(ch.value()));
  s_->settle();
  // What the watch decided waits for a call whose answer is read for it:
  // callers commonly drop a heartbeat's (always empty on one instance).
  return Changes{};
}

Result<Changes> EtcdStore::remove_server(std::string_view server_id) {
  std::lock_guard<std::mutex> lock(s_->mu);
  auto it = s_->servers.find(std::string(server_id));
  if (it == s_->servers.end()) return failed("server " + std::string(server_id) + " is not registered");
  const int64_t etcd_lease = it->second.record.etcd_lease;
  Result<int64_t> rev = s_->etcd.erase(s_->server_key(std::string(server_id)));
  if (!rev.is_ok()) return rev.status();
  (void)s_->etcd.revoke_lease(etcd_lease);
  s_->drop_server(std::string(server_id), rev.value());
  s_->settle();
  return s_->take_ready();
}

Result<Submitted> EtcdStore::submit(Request request) {
  std::lock_guard<std::mutex> lock(s_->mu);
  const Request copy = request;
  Result<Submitted> r = s_->sched.submit(std::move(request));
  if (!r.is_ok()) return r.status();
  s_->asked[r.value().ticket] = {copy, s_->clock.now()};
  s_->absorb(std::move(r.value().changes));
  s_->settle();
  Submitted out;
  out.ticket = r.value().ticket;
  out.changes = s_->take_ready();
  return out;
}

Status EtcdStore::cancel(TicketId ticket) {
  std::lock_guard<std::mutex> lock(s_->mu);
  Status st = s_->sched.cancel(ticket);
  if (st.is_ok()) s_->asked.erase(ticket);
  return st;
}

Result<Changes> EtcdStore::release(LeaseId lease) {
  std::lock_guard<std::mutex> lock(s_->mu);
  if (!s_->sched.lease(lease) && !s_->leases.count(lease)) return failed("lease " + std::to_string(lease) + " is not held");
  // Any reason but kExpired: a release erases even a lease renewed elsewhere.
  Status st = s_->erase_lease(lease, EndReason::kServerLost);
  if (!st.is_ok()) return st;
  s_->served.erase(lease);
  if (s_->sched.lease(lease)) {
    Result<Changes> ch = s_->sched.release(lease);
    if (ch.is_ok()) s_->absorb(std::move(ch.value()));
  }
  s_->settle();
  return s_->take_ready();
}

Result<Lease> EtcdStore::renew(LeaseId lease) {
  std::lock_guard<std::mutex> lock(s_->mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = s_->leases.find(lease);
    if (it == s_->leases.end()) return failed("lease " + std::to_string(lease) + " is not held");
    Lease l = it->second.lease;
    l.expiry = s_->clock.now() + s_->config.lease_ttl_ms;
    const std::string key = s_->lease_key(lease);
    Result<TxnResult> r = s_->etcd.txn({{key, EtcdCompare::Target::kModRevision, EtcdCompare::Result::kEqual, it->second.rev, {}}},
                                       {EtcdOp::put(key, detail::encode_lease(l, s_->options.instance))});
    if (!r.is_ok()) return r.status();
    if (r.value().succeeded) {
      it->second = {r.value().revision, l};
      (void)s_->sched.adopt(l);
      s_->served.insert(lease);
      return l;
    }
    s_->counters.conflicts += 1;
    Status st = s_->reload();
    if (!st.is_ok()) return st;
  }
  return overloaded("lease " + std::to_string(lease) + " kept changing while it was being renewed");
}

Changes EtcdStore::tick() {
  std::lock_guard<std::mutex> lock(s_->mu);
  const std::set<LeaseId> retry = std::move(s_->unerased);
  s_->unerased.clear();
  for (LeaseId id : retry) {
    if (!s_->erase_lease(id, EndReason::kServerLost).is_ok()) s_->unerased.insert(id);
  }
  s_->refresh_servers();
  s_->absorb(s_->sched.tick());
  s_->settle();
  return s_->take_ready();
}

Status EtcdStore::sync() {
  std::lock_guard<std::mutex> lock(s_->mu);
  Status st = s_->reload();
  if (st.is_ok()) s_->settle();
  return st;
}

void EtcdStore::read(const std::function<void(const Scheduler&)>& fn) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  fn(s_->sched);
}

std::optional<Lease> EtcdStore::lease(LeaseId lease) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->sched.lease(lease);
}

std::vector<Lease> EtcdStore::leases() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->sched.leases();
}

std::vector<ServerView> EtcdStore::servers() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->sched.servers();
}

EtcdStoreCounters EtcdStore::counters() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->counters;
}

LeaseId EtcdStore::first_lease_id() const { return s_->first_lease; }

}  // namespace rgpu::pool
