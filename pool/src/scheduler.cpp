// The scheduler: servers and their indexes, placement, the queue with fair
// share between tenants, preemption, and what time ends.
#include "rgpu/pool/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "rgpu/common/log.h"
#include "server_state.h"

namespace rgpu::pool {

using detail::DeviceState;
using detail::Need;
using detail::Pick;
using detail::ServerState;

namespace {

// How far into one tenant's queue a drain looks for a request that fits
// behind one that does not (backfill), so a drain stays bounded.
constexpr size_t kScanDepth = 32;

struct Hold {
  uint32_t server = 0;  // slot
  Pick pick;
  uint32_t units = 0;
};

struct LeaseState {
  Lease lease;
  std::vector<Hold> holds;
  uint64_t units = 0;
};

struct Waiting {
  Request request;
  Need need;
  Millis since = 0;
  Millis deadline = 0;  // 0: none
};

struct TenantState {
  uint64_t held_units = 0;
  size_t queued = 0;
};

using Shape = std::tuple<uint32_t, uint64_t, uint32_t, bool, bool, uint32_t>;
Shape shape_of(const Need& n) { return {n.devices, n.memory, n.share, n.allow_gpu, n.allow_cpu, n.min_cc}; }

struct Located {
  uint32_t server;
  Pick pick;
};

// How many ended leases' terms the wait reason's "recent leases lasted"
// looks at.
constexpr size_t kRecentTerms = 32;

// "700 MiB" below a GiB, "2.0 GiB" from there.
std::string gib_text(uint64_t bytes) {
  char buf[32];
  if (bytes < (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  }
  return buf;
}

std::string cc_text(uint32_t cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

// "2 devices of kind nvidia, 4.0 GiB each, share 0.50, compute capability
// 8.0 or above": what a request asks, in its own terms.
std::string asked_text(const Request& r) {
  std::string out = std::to_string(r.devices) + (r.devices == 1 ? " device" : " devices") + " of kind " +
                    kind_wanted_name(r.kind);
  if (r.memory_bytes) out += ", " + gib_text(r.memory_bytes) + (r.devices == 1 ? "" : " each");
  if (r.memory_bytes == 0) out += r.devices == 1 ? ", a whole slice" : ", whole slices";
  if (r.share > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ", share %.2f", r.share);
    out += buf;
  }
  if (r.min_compute_capability) out += ", compute capability " + cc_text(r.min_compute_capability) + " or above";
  return out;
}

// "~40 s", "~3 min", "~2 h".
std::string about(Millis ms) {
  const int64_t s = (ms + 500) / 1000;
  if (s < 120) return "~" + std::to_string(s) + " s";
  if (s < 7200) return "~" + std::to_string((s + 30) / 60) + " min";
  return "~" + std::to_string((s + 1800) / 3600) + " h";
}

}  // namespace

const char* end_reason_name(EndReason reason) {
  switch (reason) {
    case EndReason::kServerLost: return "server_lost";
    case EndReason::kServerRestarted: return "server_restarted";
    case EndReason::kPreempted: return "preempted";
    case EndReason::kExpired: return "expired";
  }
  return "?";
}

struct Scheduler::State {
  PoolConfig config;
  const Clock& clock;

  std::vector<std::unique_ptr<ServerState>> servers;  // by slot; null when free
  std::vector<uint32_t> free_slots;
  std::unordered_map<std::string, uint32_t> by_id;
  // Servers with some free capacity of each device class, in the policy's
  // order, so placement visits candidates first and never the full ones.
  std::set<std::pair<int64_t, uint32_t>> index[2];
  // Sums of the servers' summaries, so a request no server could take is
  // answered without visiting any.
  uint64_t open_total[2] = {0, 0};
  uint64_t idle_total[2] = {0, 0};

  std::map<LeaseId, LeaseState> leases;
  std::set<std::pair<Millis, LeaseId>> expiries;
  LeaseId next_lease = 1;

  std::unordered_map<TicketId, Waiting> waiting;
  // priority (highest first) -> tenant -> tickets, oldest first. Tickets
  // no longer waiting are skipped and dropped lazily.
  std::map<int32_t, std::map<std::string, std::deque<TicketId>>, std::greater<>> levels;
  std::set<std::pair<Millis, TicketId>> deadlines;
  TicketId next_ticket = 1;

  std::map<std::string, TenantState, std::less<>> tenants;
  std::deque<Millis> recent_terms;  // how long the last ended leases were held

  State(PoolConfig c, const Clock& k) : config(std::move(c)), clock(k) {}

  // --- words for clients ---
  // What the pool has: "4 devices on 2 servers: 2 cpu (8.0 GiB), 2 NVIDIA
  // H100 80GB HBM3 (79.6 GiB, 9.0)".
  std::string pool_text() const {
    std::map<std::string, uint32_t> kinds;
    size_t count = 0;
    size_t devices = 0;
    for (const auto& s : servers) {
      if (!s) continue;
      count += 1;
      for (const DeviceState& d : s->devices) {
        devices += 1;
        std::string k = d.spec.kind + " (" + gib_text(d.spec.memory_bytes);
        if (!d.cpu()) k += ", " + cc_text(d.spec.compute_capability);
        kinds[k + ")"] += 1;
      }
    }
    std::string out = std::to_string(devices) + (devices == 1 ? " device" : " devices") + " on " +
                      std::to_string(count) + (count == 1 ? " server" : " servers");
    const char* sep = ": ";
    for (const auto& [k, n] : kinds) {
      out += sep + std::to_string(n) + " " + k;
      sep = ", ";
    }
    return out;
  }

  // Why a request can never be placed, or nothing when some registered
  // server (or several, where splits are allowed) could give it once every
  // lease ended. With no server registered it may yet be placed.
  std::optional<std::string> never_fits(const Request& r, const Need& need) const {
    size_t registered = 0;
    uint32_t ever = 0;
    bool cpu_here = false;
    bool gpu_here = false;
    std::vector<Pick> picks;
    for (const auto& s : servers) {
      if (!s) continue;
      registered += 1;
      for (const DeviceState& d : s->devices) (d.cpu() ? cpu_here : gpu_here) = true;
      picks.clear();
      detail::fit_server(detail::pristine(*s), need, need.devices, config.policy, &picks);
      if (picks.size() == need.devices) return std::nullopt;
      ever += static_cast<uint32_t>(picks.size());
    }
    if (registered == 0) return std::nullopt;
    if (config.split_across_servers && ever >= need.devices) return std::nullopt;
    std::string why = "no registered server could ever give this request: " + asked_text(r) +
                      " asked; the pool has " + pool_text();
    if (!need.allow_cpu && cpu_here) why += "; for rgpu's CPU device ask for kind cpu or any (--kind, RGPU_POOL_KIND)";
    if (!need.allow_gpu && gpu_here) why += "; for its NVIDIA devices ask for kind nvidia or any";
    return why;
  }

  // Why `w` waits, `ahead` requests before it.
  std::string wait_text(const Waiting& w, size_t ahead) const {
    uint32_t total = 0;
    uint32_t free = 0;
    size_t registered = 0;
    for (const auto& s : servers) {
      if (!s) continue;
      registered += 1;
      for (const DeviceState& d : s->devices) {
        if (!w.need.allows(d)) continue;
        total += 1;
        if (detail::pick_slice(d, w.need, config.policy) >= 0) free += 1;
      }
    }
    std::string out = asked_text(w.request) + " asked";
    if (registered == 0) {
      out += "; no server has registered with the pool yet";
    } else {
      out += ", " + std::to_string(free) + " free of " + std::to_string(total);
    }
    out += "; position " + std::to_string(ahead + 1);
    if (!recent_terms.empty()) {
      std::vector<Millis> terms(recent_terms.begin(), recent_terms.end());
      std::nth_element(terms.begin(), terms.begin() + static_cast<long>(terms.size() / 2), terms.end());
      out += "; recent leases lasted " + about(terms[terms.size() / 2]);
    }
    return out;
  }

  // --- indexes ---
  void unindex(uint32_t slot) {
    ServerState& s = *servers[slot];
    for (int c = 0; c < 2; ++c) {
      if (s.indexed[c]) index[c].erase({s.key, slot});
      s.indexed[c] = false;
    }
  }
  void reindex(uint32_t slot) {
    unindex(slot);
    ServerState& s = *servers[slot];
    for (int c = 0; c < 2; ++c) {
      open_total[c] -= s.open_devices[c];
      idle_total[c] -= s.idle_devices[c];
    }
    s.summarize();
    s.key = detail::index_key(s, config.policy);
    for (int c = 0; c < 2; ++c) {
      open_total[c] += s.open_devices[c];
      idle_total[c] += s.idle_devices[c];
      if (s.open(c)) {
        index[c].insert({s.key, slot});
        s.indexed[c] = true;
      }
    }
  }

  // --- placement ---
  std::vector<int> classes(const Need& n) const {
    std::vector<int> out;
    if (n.allow_gpu) out.push_back(0);
    if (n.allow_cpu) out.push_back(1);
    return out;
  }

  // A place for `need` on one server, or split over several when allowed.
  bool find_place(const Need& need, std::vector<Located>* out) {
    uint64_t room = 0;
    for (int c : classes(need)) room += need.whole() ? idle_total[c] : open_total[c];
    if (room < need.devices) return false;
    std::vector<Pick> picks;
    for (int c : classes(need)) {
      for (const auto& [key, slot] : index[c]) {
        if (detail::could_fit(*servers[slot], need) < need.devices) continue;
        picks.clear();
        detail::fit_server(*servers[slot], need, need.devices, config.policy, &picks);
        if (picks.size() == need.devices) {
          for (const Pick& p : picks) out->push_back({slot, p});
          return true;
        }
      }
    }
    if (need.devices == 1 || !config.split_across_servers) return false;
    std::set<uint32_t> used;
    for (int c : classes(need)) {
      for (const auto& [key, slot] : index[c]) {
        if (used.count(slot) || detail::could_fit(*servers[slot], need) == 0) continue;
        picks.clear();
        detail::fit_server(*servers[slot], need, need.devices - static_cast<uint32_t>(out->size()), config.policy,
                           &picks);
        if (picks.empty()) continue;
        used.insert(slot);
        for (const Pick& p : picks) out->push_back({slot, p});
        if (out->size() == need.devices) return true;
      }
    }
    out->clear();
    return false;
  }

  Lease grant(const Request& r, const std::vector<Located>& where) {
    LeaseState ls;
    Lease& l = ls.lease;
    l.id = next_lease++;
    l.tenant = r.tenant;
    l.priority = r.priority;
    l.issued = clock.now();
    l.expiry = l.issued + config.lease_ttl_ms;
    std::set<uint32_t> touched;
    for (const Located& at : where) {
      ServerState& s = *servers[at.server];
      detail::take(s, at.pick);
      s.leases.insert(l.id);
      touched.insert(at.server);
      const DeviceState& d = s.devices[at.pick.device];
      PlacedDevice pd;
      pd.server_id = s.id;
      pd.address = s.address;
      pd.device = d.spec.index;
      pd.slice = d.slices[at.pick.slice].spec.id;
      pd.memory_bytes = at.pick.memory;
      pd.share = units_to_share(at.pick.share);
      l.placement.push_back(pd);
      const uint32_t units = detail::pick_units(s, at.pick);
      ls.holds.push_back({at.server, at.pick, units});
      ls.units += units;
    }
    for (uint32_t slot : touched) reindex(slot);
    tenants[r.tenant].held_units += ls.units;
    expiries.insert({l.expiry, l.id});
    Lease copy = l;
    leases.emplace(l.id, std::move(ls));
    return copy;
  }

  // Frees a lease's holds everywhere and forgets it; returns it.
  Lease end_lease(LeaseId id) {
    auto it = leases.find(id);
    LeaseState ls = std::move(it->second);
    leases.erase(it);
    expiries.erase({ls.lease.expiry, id});
    std::set<uint32_t> touched;
    for (const Hold& h : ls.holds) {
      ServerState* s = servers[h.server].get();
      if (!s) continue;
      detail::give_back(*s, h.pick);
      s->leases.erase(id);
      touched.insert(h.server);
    }
    for (uint32_t slot : touched) reindex(slot);
    auto t = tenants.find(ls.lease.tenant);
    if (t != tenants.end()) t->second.held_units -= ls.units;
    recent_terms.push_back(std::max<Millis>(0, clock.now() - ls.lease.issued));
    if (recent_terms.size() > kRecentTerms) recent_terms.pop_front();
    return std::move(ls.lease);
  }

  void end_server(uint32_t slot, EndReason reason, Changes* ch) {
    ServerState& s = *servers[slot];
    const std::vector<LeaseId> ids(s.leases.begin(), s.leases.end());
    RGPU_INFO("pool server left id=%s reason=%s leases=%zu", s.id.c_str(), end_reason_name(reason), ids.size());
    for (LeaseId id : ids) ch->ended.push_back({end_lease(id), reason});
    unindex(slot);
    for (int c = 0; c < 2; ++c) {
      open_total[c] -= s.open_devices[c];
      idle_total[c] -= s.idle_devices[c];
    }
    by_id.erase(s.id);
    servers[slot].reset();
    free_slots.push_back(slot);
  }

  // --- the queue ---
  void enqueue(TicketId t, Waiting w) {
    // In ticket order, also for a ticket put back by requeue().
    std::deque<TicketId>& q = levels[w.request.priority][w.request.tenant];
    q.insert(std::upper_bound(q.begin(), q.end(), t), t);
    if (w.deadline) deadlines.insert({w.deadline, t});
    tenants[w.request.tenant].queued += 1;
    waiting.emplace(t, std::move(w));
  }
  void unqueue(std::unordered_map<TicketId, Waiting>::iterator it) {
    if (it->second.deadline) deadlines.erase({it->second.deadline, it->first});
    tenants[it->second.request.tenant].queued -= 1;
    waiting.erase(it);
  }

  double ratio(const std::string& tenant) {
    return static_cast<double>(tenants[tenant].held_units) / config.weight_of(tenant);
  }

  // Places waiting requests while capacity lasts: highest priority first;
  // within a priority, the tenant furthest below its weight first; within
  // a tenant, oldest first, looking past ones that do not fit (backfill).
  void drain(Changes* ch) {
    if (waiting.empty()) return;
    std::set<Shape> failed;  // capacity only shrinks during a drain
    for (auto lvl = levels.begin(); lvl != levels.end();) {
      auto& queues = lvl->second;
      std::set<std::string> exhausted;
      for (;;) {
        if (index[0].empty() && index[1].empty()) return;
        std::deque<TicketId>* best = nullptr;
        const std::string* best_tenant = nullptr;
        double best_ratio = 0;
        for (auto& [tenant, q] : queues) {
          while (!q.empty() && !waiting.count(q.front())) q.pop_front();
          if (q.empty() || exhausted.count(tenant)) continue;
          const double r = ratio(tenant);
          if (!best || r < best_ratio) {
            best = &q;
            best_tenant = &tenant;
            best_ratio = r;
          }
        }
        if (!best) break;
        bool placed = false;
        for (size_t i = 0; i < best->size() && i < kScanDepth; ++i) {
          auto it = waiting.find((*best)[i]);
          if (it == waiting.end()) continue;
          if (it->second.deadline && it->second.deadline <= clock.now()) {
            // Past its timeout but not yet swept by tick(): never placed.
            ch->timed_out.push_back(it->first);
            unqueue(it);
            continue;
          }
          const Shape shape = shape_of(it->second.need);
          if (failed.count(shape)) continue;
          std::vector<Located> where;
          if (!find_place(it->second.need, &where)) {
            failed.insert(shape);
            continue;
          }
          const TicketId t = it->first;
          const Millis since = it->second.since;
          Lease l = grant(it->second.request, where);
          unqueue(it);
          best->erase(best->begin() + static_cast<std::ptrdiff_t>(i));
          ch->granted.push_back({t, std::move(l), clock.now() - since});
          placed = true;
          break;
        }
        if (!placed) exhausted.insert(*best_tenant);
      }
      for (auto q = queues.begin(); q != queues.end();) q = q->second.empty() ? queues.erase(q) : std::next(q);
      lvl = queues.empty() ? levels.erase(lvl) : std::next(lvl);
    }
  }

  // --- preemption ---
  // The fewest leases of lower priority whose end lets `need` fit on one
  // server; lowest priority, then newest, are ended first. Empty: none.
  std::vector<LeaseId> victims_for(const Need& need, int32_t priority, uint32_t* where) {
    std::vector<LeaseId> best;
    for (uint32_t slot = 0; slot < servers.size(); ++slot) {
      if (!servers[slot]) continue;
      const ServerState& s = *servers[slot];
      std::vector<std::tuple<int32_t, int64_t, LeaseId>> lower;
      for (LeaseId id : s.leases) {
        const LeaseState& ls = leases.at(id);
        if (ls.lease.priority >= priority) continue;
        // Only leases on devices the request could use make room for it.
        const bool useful = std::any_of(ls.holds.begin(), ls.holds.end(), [&](const Hold& h) {
          return h.server == slot && need.allows(s.devices[h.pick.device]);
        });
        if (useful) lower.emplace_back(ls.lease.priority, -static_cast<int64_t>(id), id);
      }
      if (lower.empty() || (!best.empty() && best.size() <= 1)) continue;
      std::sort(lower.begin(), lower.end());
      ServerState trial = s;
      std::vector<LeaseId> chosen;
      std::vector<Pick> picks;
      for (const auto& [p, neg, id] : lower) {
        for (const Hold& h : leases.at(id).holds) {
          if (h.server == slot) detail::give_back(trial, h.pick);
        }
        chosen.push_back(id);
        if (!best.empty() && chosen.size() >= best.size()) break;
        picks.clear();
        detail::fit_server(trial, need, need.devices, config.policy, &picks);
        if (picks.size() == need.devices) {
          best = chosen;
          *where = slot;
          break;
        }
      }
    }
    return best;
  }
};

Scheduler::Scheduler(PoolConfig config, const Clock& clock) : s_(std::make_unique<State>(std::move(config), clock)) {}
Scheduler::~Scheduler() = default;

const PoolConfig& Scheduler::config() const { return s_->config; }

Result<Changes> Scheduler::register_server(ServerInfo info) {
  Status v = validate(info);
  if (!v.is_ok()) return v;
  Changes ch;
  auto old = s_->by_id.find(info.id);
  if (old != s_->by_id.end()) s_->end_server(old->second, EndReason::kServerRestarted, &ch);
  uint32_t slot;
  if (!s_->free_slots.empty()) {
    slot = s_->free_slots.back();
    s_->free_slots.pop_back();
  } else {
    slot = static_cast<uint32_t>(s_->servers.size());
    s_->servers.emplace_back();
  }
  s_->servers[slot] = std::make_unique<ServerState>(ServerState::from(info, s_->clock.now()));
  s_->by_id[info.id] = slot;
  s_->reindex(slot);
  RGPU_INFO("pool server joined id=%s devices=%zu", info.id.c_str(), info.devices.size());
  s_->drain(&ch);
  return ch;
}

Result<Changes> Scheduler::heartbeat(std::string_view server_id, const std::vector<DeviceUse>& use) {
  auto it = s_->by_id.find(std::string(server_id));
  if (it == s_->by_id.end()) return failed("server " + std::string(server_id) + " is not registered");
  ServerState& s = *s_->servers[it->second];
  for (const DeviceUse& u : use) {
    auto d = std::find_if(s.devices.begin(), s.devices.end(), [&](const DeviceState& x) { return x.spec.index == u.index; });
    if (d == s.devices.end()) return invalid_argument("heartbeat names device " + std::to_string(u.index) + " the server does not have");
    if (!(u.utilization >= 0.0 && u.utilization <= 1.0)) return invalid_argument("utilization outside 0..1");
  }
  for (const DeviceUse& u : use) {
    for (DeviceState& d : s.devices) {
      if (d.spec.index == u.index) d.use = u;
    }
  }
  s.last_heartbeat = s_->clock.now();
  if (s_->config.policy == Policy::kLeastLoaded) s_->reindex(it->second);
  return Changes{};
}

Result<Changes> Scheduler::remove_server(std::string_view server_id) {
  auto it = s_->by_id.find(std::string(server_id));
  if (it == s_->by_id.end()) return failed("server " + std::string(server_id) + " is not registered");
  Changes ch;
  s_->end_server(it->second, EndReason::kServerLost, &ch);
  s_->drain(&ch);
  return ch;
}

Result<Submitted> Scheduler::submit(Request request) {
  Status v = validate(request);
  if (!v.is_ok()) return v;
  Waiting w;
  w.need = Need::from(request);
  std::vector<Located> where;
  bool fits = s_->find_place(w.need, &where);
  if (!fits) {
    if (auto never = s_->never_fits(request, w.need)) return failed(*never);
  }
  Submitted out;
  out.ticket = s_->next_ticket++;
  w.since = s_->clock.now();
  const Millis timeout = request.timeout_ms ? request.timeout_ms : s_->config.queue_timeout_ms;
  w.deadline = timeout ? w.since + timeout : 0;
  w.request = std::move(request);
  if (!fits && s_->config.preemption) {
    uint32_t slot = 0;
    const std::vector<LeaseId> victims = s_->victims_for(w.need, w.request.priority, &slot);
    for (LeaseId id : victims) {
      RGPU_INFO("pool preempt lease=%llu for_tenant=%s", static_cast<unsigned long long>(id), w.request.tenant.c_str());
      out.changes.ended.push_back({s_->end_lease(id), EndReason::kPreempted});
    }
    if (!victims.empty()) {
      // The server the victims were chosen on, not whichever the policy
      // would pick first: their slices are what the request needs.
      std::vector<Pick> picks;
      detail::fit_server(*s_->servers[slot], w.need, w.need.devices, s_->config.policy, &picks);
      for (const Pick& p : picks) where.push_back({slot, p});
      fits = picks.size() == w.need.devices;
    }
  }
  if (fits) {
    out.changes.granted.push_back({out.ticket, s_->grant(w.request, where), 0});
    s_->drain(&out.changes);  // preemption may have freed more than needed
  } else {
    s_->tenants[w.request.tenant];  // known from now on, for fair share
    s_->enqueue(out.ticket, std::move(w));
  }
  return out;
}

Status Scheduler::cancel(TicketId ticket) {
  auto it = s_->waiting.find(ticket);
  if (it == s_->waiting.end()) return failed("ticket " + std::to_string(ticket) + " is not waiting");
  s_->unqueue(it);
  return Status::ok();
}

Result<Changes> Scheduler::release(LeaseId lease) {
  if (!s_->leases.count(lease)) return failed("lease " + std::to_string(lease) + " is not held");
  Changes ch;
  s_->end_lease(lease);
  s_->drain(&ch);
  return ch;
}

Result<Lease> Scheduler::renew(LeaseId lease) {
  auto it = s_->leases.find(lease);
  if (it == s_->leases.end()) return failed("lease " + std::to_string(lease) + " is not held");
  Lease& l = it->second.lease;
  s_->expiries.erase({l.expiry, lease});
  l.expiry = s_->clock.now() + s_->config.lease_ttl_ms;
  s_->expiries.insert({l.expiry, lease});
  return l;
}

Changes Scheduler::tick() {
  Changes ch;
  const Millis now = s_->clock.now();
  for (uint32_t slot = 0; slot < s_->servers.size(); ++slot) {
    const ServerState* s = s_->servers[slot].get();
    if (s && now - s->last_heartbeat >= s_->config.heartbeat_timeout_ms) {
      s_->end_server(slot, EndReason::kServerLost, &ch);
    }
  }
  while (!s_->deadlines.empty() && s_->deadlines.begin()->first <= now) {
    const TicketId t = s_->deadlines.begin()->second;
    s_->unqueue(s_->waiting.find(t));
    ch.timed_out.push_back(t);
  }
  while (!s_->expiries.empty() && s_->expiries.begin()->first <= now) {
    const LeaseId id = s_->expiries.begin()->second;
    ch.ended.push_back({s_->end_lease(id), EndReason::kExpired});
  }
  s_->drain(&ch);
  return ch;
}

std::optional<QueuePosition> Scheduler::position(TicketId ticket) const {
  auto it = s_->waiting.find(ticket);
  if (it == s_->waiting.end()) return std::nullopt;
  QueuePosition pos;
  pos.since = it->second.since;
  const int32_t p = it->second.request.priority;
  for (const auto& [t, w] : s_->waiting) {
    if (w.request.priority > p || (w.request.priority == p && t < ticket)) pos.ahead += 1;
  }
  pos.why = s_->wait_text(it->second, pos.ahead);
  return pos;
}

std::optional<Lease> Scheduler::lease(LeaseId lease) const {
  auto it = s_->leases.find(lease);
  if (it == s_->leases.end()) return std::nullopt;
  return it->second.lease;
}

std::vector<Lease> Scheduler::leases() const {
  std::vector<Lease> out;
  for (const auto& [id, ls] : s_->leases) out.push_back(ls.lease);
  return out;
}

std::vector<ServerView> Scheduler::servers() const {
  std::vector<ServerView> out;
  for (const auto& s : s_->servers) {
    if (!s) continue;
    ServerView v;
    v.info.id = s->id;
    v.info.address = s->address;
    for (const DeviceState& d : s->devices) {
      Device dev = d.spec;
      for (const auto& sl : d.slices) dev.slices.push_back(sl.spec);
      v.info.devices.push_back(std::move(dev));
      v.use.push_back(d.use);
    }
    v.last_heartbeat = s->last_heartbeat;
    v.leases = s->leases.size();
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const ServerView& a, const ServerView& b) { return a.info.id < b.info.id; });
  return out;
}

std::vector<QueuedView> Scheduler::queue() const {
  std::vector<QueuedView> out;
  out.reserve(s_->waiting.size());
  for (const auto& [t, w] : s_->waiting) out.push_back({t, w.request, w.since, w.deadline, {}});
  std::sort(out.begin(), out.end(), [](const QueuedView& a, const QueuedView& b) {
    return a.request.priority != b.request.priority ? a.request.priority > b.request.priority : a.ticket < b.ticket;
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].why = s_->wait_text(s_->waiting.at(out[i].ticket), i);
  return out;
}

PoolStats Scheduler::stats() const {
  PoolStats st;
  for (const auto& s : s_->servers) {
    if (!s) continue;
    st.servers += 1;
    st.devices += s->devices.size();
  }
  st.capacity_devices = static_cast<double>(st.devices);
  st.leases = s_->leases.size();
  st.queued = s_->waiting.size();
  for (const auto& [name, t] : s_->tenants) {
    TenantUse u;
    u.tenant = name;
    u.weight = s_->config.weight_of(name);
    u.held_devices = static_cast<double>(t.held_units) / kShareUnits;
    u.queued = t.queued;
    st.held_devices += u.held_devices;
    st.tenants.push_back(std::move(u));
  }
  return st;
}

void Scheduler::set_next_lease_id(LeaseId first) { s_->next_lease = first; }

Status Scheduler::adopt(const Lease& lease) {
  auto held = s_->leases.find(lease.id);
  if (held != s_->leases.end()) {
    Lease& l = held->second.lease;
    s_->expiries.erase({l.expiry, lease.id});
    l.expiry = lease.expiry;
    s_->expiries.insert({l.expiry, lease.id});
    return Status::ok();
  }
  // Every slice is found and checked before any is taken, so a refusal
  // leaves the scheduler as it was.
  std::vector<Located> where;
  for (const PlacedDevice& pd : lease.placement) {
    auto it = s_->by_id.find(pd.server_id);
    if (it == s_->by_id.end()) return failed("adopted lease names unknown server " + pd.server_id);
    const ServerState& s = *s_->servers[it->second];
    Located at{it->second, {}};
    bool found = false;
    for (uint32_t d = 0; d < s.devices.size() && !found; ++d) {
      if (s.devices[d].spec.index != pd.device) continue;
      for (uint32_t k = 0; k < s.devices[d].slices.size(); ++k) {
        if (s.devices[d].slices[k].spec.id != pd.slice) continue;
        at.pick = {d, k, pd.memory_bytes, share_to_units(pd.share)};
        found = true;
        break;
      }
    }
    if (!found) return failed("adopted lease names an unknown slice of server " + pd.server_id);
    for (const Located& other : where) {
      if (other.server == at.server && other.pick.device == at.pick.device && other.pick.slice == at.pick.slice) {
        return failed("adopted lease names one slice twice");
      }
    }
    const detail::SliceState& sl = s.devices[at.pick.device].slices[at.pick.slice];
    if (!sl.has_session_left() || sl.free_memory < at.pick.memory || sl.free_share < at.pick.share) {
      return failed("adopted lease does not fit slice " + std::to_string(pd.slice) + " of server " + pd.server_id);
    }
    where.push_back(at);
  }
  LeaseState ls;
  ls.lease = lease;
  std::set<uint32_t> touched;
  for (const Located& at : where) {
    ServerState& s = *s_->servers[at.server];
    detail::take(s, at.pick);
    s.leases.insert(lease.id);
    touched.insert(at.server);
    const uint32_t units = detail::pick_units(s, at.pick);
    ls.holds.push_back({at.server, at.pick, units});
    ls.units += units;
  }
  for (uint32_t slot : touched) s_->reindex(slot);
  s_->tenants[lease.tenant].held_units += ls.units;
  s_->expiries.insert({lease.expiry, lease.id});
  s_->leases.emplace(lease.id, std::move(ls));
  return Status::ok();
}

Status Scheduler::requeue(LeaseId lease, TicketId ticket, Request request, Millis since) {
  if (!s_->leases.count(lease)) return failed("lease " + std::to_string(lease) + " is not held");
  if (s_->waiting.count(ticket)) return failed("ticket " + std::to_string(ticket) + " is already waiting");
  s_->end_lease(lease);
  Waiting w;
  w.need = Need::from(request);
  w.since = since;
  const Millis timeout = request.timeout_ms ? request.timeout_ms : s_->config.queue_timeout_ms;
  w.deadline = timeout ? since + timeout : 0;
  w.request = std::move(request);
  s_->enqueue(ticket, std::move(w));
  return Status::ok();
}

}  // namespace rgpu::pool
