// The etcd store's view: events from the watch or a reload, applied to the
// records this instance knows and to its scheduler.
#include <cstdlib>

#include "etcd_store_state.h"
#include "rgpu/common/log.h"

namespace rgpu::pool {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

Result<LeaseId> lease_id_of(const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !end || *end != '\0' || v == 0) return failed("bad lease key");
  return static_cast<LeaseId>(v);
}

}  // namespace

void EtcdStore::State::absorb(Changes ch) {
  for (auto& g : ch.granted) work.granted.push_back(std::move(g));
  for (auto t : ch.timed_out) work.timed_out.push_back(t);
  for (auto& e : ch.ended) work.ended.push_back(std::move(e));
}

int64_t EtcdStore::State::known_rev(const std::string& key) const {
  const std::string servers_p = options.prefix + "servers/";
  const std::string leases_p = options.prefix + "leases/";
  if (auto d = deleted.find(key); d != deleted.end()) return d->second;
  if (starts_with(key, servers_p)) {
    auto it = servers.find(key.substr(servers_p.size()));
    return it == servers.end() ? 0 : it->second.rev;
  }
  if (starts_with(key, leases_p)) {
    Result<LeaseId> id = lease_id_of(key.substr(leases_p.size()));
    if (!id.is_ok()) return 0;
    auto it = leases.find(id.value());
    return it == leases.end() ? 0 : it->second.rev;
  }
  auto it = slices.find(key);
  return it == slices.end() ? 0 : it->second.rev;
}

void EtcdStore::State::apply(const std::string& key, int64_t rev, bool deleted_now, const std::string& value) {
  // Already folded in: by a reload, or by this instance's own write.
  if (rev <= floor || rev <= known_rev(key)) return;
  const std::string servers_p = options.prefix + "servers/";
  const std::string leases_p = options.prefix + "leases/";
  const std::string slices_p = options.prefix + "slices/";
  if (starts_with(key, servers_p)) {
    const std::string id = key.substr(servers_p.size());
    deleted_now ? drop_server(id, rev) : put_server(id, rev, value);
  } else if (starts_with(key, leases_p)) {
    Result<LeaseId> id = lease_id_of(key.substr(leases_p.size()));
    if (!id.is_ok()) return;
    deleted_now ? drop_lease(id.value(), rev) : put_lease(id.value(), rev, value);
  } else if (starts_with(key, slices_p)) {
    if (deleted_now) {
      slices.erase(key);
      deleted[key] = rev;
      return;
    }
    Result<std::vector<detail::SliceHold>> holds = detail::decode_holds(value);
    if (!holds.is_ok()) {
      RGPU_WARN("pool etcd record skipped key=%s error=%s", key.c_str(), holds.status().message().c_str());
      return;
    }
    deleted.erase(key);
    slices[key] = {rev, std::move(holds.value())};
  }
}

void EtcdStore::State::put_server(const std::string& id, int64_t rev, const std::string& value) {
  Result<detail::ServerRecord> r = detail::decode_server(value);
  if (!r.is_ok() || r.value().info.id != id) {
    RGPU_WARN("pool etcd record skipped server=%s error=%s", id.c_str(),
              r.is_ok() ? "id differs from key" : r.status().message().c_str());
    return;
  }
  deleted.erase(server_key(id));
  servers[id] = {rev, r.value()};
  // A new record for a server is a new registration: as on one instance,
  // a server registering again has restarted and its leases end.
  Result<Changes> ch = sched.register_server(r.value().info);
  if (!ch.is_ok()) {
    RGPU_WARN("pool etcd server refused server=%s error=%s", id.c_str(), ch.status().message().c_str());
    return;
  }
  registered.insert(id);
  absorb(std::move(ch.value()));
}

void EtcdStore::State::drop_server(const std::string& id, int64_t rev) {
  servers.erase(id);
  deleted[server_key(id)] = rev;
  if (!registered.erase(id)) return;
  Result<Changes> ch = sched.remove_server(id);
  if (ch.is_ok()) absorb(std::move(ch.value()));
}

void EtcdStore::State::put_lease(LeaseId id, int64_t rev, const std::string& value) {
  Result<Lease> l = detail::decode_lease(value);
  if (!l.is_ok() || l.value().id != id) {
    RGPU_WARN("pool etcd record skipped lease=%llu error=%s", static_cast<unsigned long long>(id),
              l.is_ok() ? "id differs from key" : l.status().message().c_str());
    return;
  }
  deleted.erase(lease_key(id));
  leases[id] = {rev, l.value()};
  // New here: its slices are taken. Held: its expiry may have moved.
  Status s = sched.adopt(l.value());
  if (!s.is_ok()) {
    // The view disagrees with etcd for a moment (a lease this instance is
    // still ending holds the slices). etcd's records decide every grant,
    // so this costs at most a lost race; reconcile() tries again.
    RGPU_DEBUG("pool etcd lease not adopted lease=%llu error=%s", static_cast<unsigned long long>(id),
               s.message().c_str());
  }
}

void EtcdStore::State::drop_lease(LeaseId id, int64_t rev) {
  auto it = leases.find(id);
  Lease gone;
  if (it != leases.end()) gone = it->second.lease;
  leases.erase(id);
  deleted[lease_key(id)] = rev;
  std::optional<Lease> held = sched.lease(id);
  RGPU_DEBUG("pool etcd lease gone lease=%llu rev=%lld held=%d", static_cast<unsigned long long>(id),
             static_cast<long long>(rev), held ? 1 : 0);
  if (!held) return;
  Result<Changes> ch = sched.release(id);
  if (!ch.is_ok()) return;
  if (served.erase(id)) {
    // Ended by another instance while this one serves its client: say why
    // as well as can be told from here.
    EndReason why = EndReason::kPreempted;
    bool server_gone = false;
    for (const PlacedDevice& p : held->placement) server_gone = server_gone || !servers.count(p.server_id);
    if (held->expiry <= clock.now()) {
      why = EndReason::kExpired;
    } else if (server_gone) {
      why = EndReason::kServerLost;
    }
    ready.ended.push_back({*held, why});
  }
  absorb(std::move(ch.value()));
}

void EtcdStore::State::reconcile() {
  for (const auto& [id, e] : leases) {
    if (!sched.lease(id)) (void)sched.adopt(e.lease);
  }
}

Status EtcdStore::State::reload() {
  Result<RangeResult> r = etcd.range(options.prefix, true);
  if (!r.is_ok()) return r.status();
  counters.reloads += 1;
  const int64_t at = r.value().revision;
  const std::string servers_p = options.prefix + "servers/";
  const std::string leases_p = options.prefix + "leases/";
  const std::string slices_p = options.prefix + "slices/";
  std::map<std::string, const KeyValue*> srv, lse, slc;
  for (const KeyValue& kv : r.value().kvs) {
    if (starts_with(kv.key, servers_p)) srv[kv.key] = &kv;
    else if (starts_with(kv.key, leases_p)) lse[kv.key] = &kv;
    else if (starts_with(kv.key, slices_p)) slc[kv.key] = &kv;
  }
  // Servers first, so leases find them; leases gone before leases new, so
  // freed slices can take them; servers gone last.
  const int64_t old_floor = floor;
  floor = 0;  // apply() below compares with the view's own revisions
  for (const auto& [k, kv] : srv) apply(k, kv->mod_revision, false, kv->value);
  std::vector<LeaseId> gone;
  for (const auto& [id, e] : leases) {
    if (!lse.count(lease_key(id))) gone.push_back(id);
  }
  for (LeaseId id : gone) drop_lease(id, at);
  for (const auto& [k, kv] : lse) apply(k, kv->mod_revision, false, kv->value);
  std::vector<std::string> lost;
  for (const auto& [id, e] : servers) {
    if (!srv.count(server_key(id))) lost.push_back(id);
  }
  for (const std::string& id : lost) drop_server(id, at);
  slices.clear();
  for (const auto& [k, kv] : slc) apply(k, kv->mod_revision, false, kv->value);
  // Everything up to `at` is now in the view; older tombstones are moot.
  deleted.clear();
  floor = std::max(old_floor, at);
  reconcile();
  return Status::ok();
}

}  // namespace rgpu::pool
