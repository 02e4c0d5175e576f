// The service's one seam to the scheduler (its own, or the one an EtcdStore
// keeps in step with etcd), the usage history beside it, and lease signing.
#include "coordinator.h"

#include <variant>

#include "rgpu/common/log.h"
#include "rgpu/pool/lease_token.h"

namespace rgpu::pool::service {

Coordinator::Coordinator(PoolConfig config, std::string key, std::unique_ptr<Clock> clock)
    : config_(std::move(config)), clock_(std::move(clock)), key_(std::move(key)) {}

Result<std::unique_ptr<Coordinator>> Coordinator::open(PoolConfig config, std::string key,
                                                       std::unique_ptr<Clock> clock, CoordinatorOptions options) {
  std::unique_ptr<Coordinator> c(new Coordinator(config, std::move(key), std::move(clock)));
  if (options.etcd.empty()) {
    c->scheduler_ = std::make_unique<Scheduler>(config, *c->clock_);
  } else {
    EtcdOptions etcd;
    etcd.endpoints = options.etcd;
    auto store = EtcdStore::open(config, *c->clock_, std::move(etcd), options.store);
    if (!store.is_ok()) return Status(store.status().kind(), "etcd: " + store.status().message());
    c->store_ = std::move(store.value());
  }
  if (options.metrics != nullptr) c->metrics_ = std::make_unique<PoolMetrics>(*options.metrics);
  if (options.history) {
    options.history->heartbeat_interval_ms = config.heartbeat_interval_ms;
    auto history = History::open(*options.history, c->now());
    if (!history.is_ok()) return Status(history.status().kind(), "history: " + history.status().message());
    c->history_ = std::move(history.value());
    if (c->history_->skipped_at_open() > 0) {
      RGPU_WARN("history skipped lines=%zu path=%s", c->history_->skipped_at_open(), options.history->path.c_str());
    }
  }
  return c;
}

void Coordinator::record(const Changes& changes, const std::vector<QueuedView>& before) {
  if (metrics_) metrics_->observe(changes);
  if (!history_) return;
  const Millis t = now();
  history_->changes(changes, t);
  for (TicketId ticket : changes.timed_out) {
    for (const QueuedView& q : before) {
      if (q.ticket == ticket) history_->gave_up(q.request.tenant, t - q.since, t);
    }
  }
  record_queue();
}

void Coordinator::record_queue() {
  if (history_) history_->queue(queue(), now());
}

Result<Changes> Coordinator::register_server(ServerInfo server) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  const ServerInfo seen = history_ ? server : ServerInfo{};
  auto r = store_ ? store_->register_server(std::move(server)) : scheduler_->register_server(std::move(server));
  if (r.is_ok()) {
    if (history_) history_->server_registered(seen, now());  // before its grants: the report needs its devices
    record(r.value(), before);
  }
  return r;
}

Result<Changes> Coordinator::heartbeat(std::string_view id, const std::vector<DeviceUse>& use) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  auto r = store_ ? store_->heartbeat(id, use) : scheduler_->heartbeat(id, use);
  if (r.is_ok()) {
    if (history_) history_->heartbeat(id, use, now());
    record(r.value(), before);
  }
  return r;
}

Result<Changes> Coordinator::remove_server(std::string_view id) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  auto r = store_ ? store_->remove_server(id) : scheduler_->remove_server(id);
  if (r.is_ok()) record(r.value(), before);
  return r;
}

Result<Submitted> Coordinator::submit(Request request) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  auto r = store_ ? store_->submit(std::move(request)) : scheduler_->submit(std::move(request));
  if (r.is_ok()) record(r.value().changes, before);
  return r;
}

Status Coordinator::cancel(TicketId ticket) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  Status s = store_ ? store_->cancel(ticket) : scheduler_->cancel(ticket);
  if (s.is_ok() && history_) {
    const Millis t = now();
    for (const QueuedView& q : before) {
      if (q.ticket == ticket) history_->gave_up(q.request.tenant, t - q.since, t);
    }
    record_queue();
  }
  return s;
}

Result<Changes> Coordinator::release(LeaseId lease) {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  auto r = store_ ? store_->release(lease) : scheduler_->release(lease);
  if (r.is_ok()) {
    if (history_) history_->released(lease, now());
    record(r.value(), before);
  }
  return r;
}

Result<Lease> Coordinator::renew(LeaseId lease) { return store_ ? store_->renew(lease) : scheduler_->renew(lease); }

Changes Coordinator::tick() {
  const std::vector<QueuedView> before = history_ ? queue() : std::vector<QueuedView>{};
  Changes changes = store_ ? store_->tick() : scheduler_->tick();
  record(changes, before);
  if (history_) history_->sync(now());
  // The state gauges, at most once a second (a scrape is no more frequent).
  if (metrics_ && now() - metrics_refreshed_ >= 1000) {
    metrics_refreshed_ = now();
    metrics_->refresh(queue(), leases(), servers());
  }
  return changes;
}

Result<std::string> Coordinator::sign(Lease lease) const {
  auto nonce = random_lease_nonce();
  if (!nonce.is_ok()) return nonce.status();
  lease.nonce = std::move(nonce.value());
  return sign_lease(lease, key_);
}

std::vector<std::string> Coordinator::history_lines(Millis since_ms, size_t max_bytes, bool* truncated) const {
  *truncated = false;
  if (!history_) return {};
  const std::vector<HistoryEvent> events = history_->snapshot();
  if (events.empty()) return {};
  const Millis start = since_ms > 0 ? events.back().t - since_ms : events.front().t;
  // The last queue sample before the window says how long the queue was
  // when it opened.
  size_t last_queue_before = events.size();
  for (size_t i = 0; i < events.size() && events[i].t < start; ++i) {
    if (std::holds_alternative<QueueSample>(events[i].body)) last_queue_before = i;
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < events.size(); ++i) {
    const EventBody& b = events[i].body;
    const bool state = std::holds_alternative<PoolStarted>(b) || std::holds_alternative<ServerSeen>(b) ||
                       std::holds_alternative<LeaseGranted>(b) || std::holds_alternative<LeaseEnded>(b);
    if (events[i].t >= start || state || i == last_queue_before) lines.push_back(encode_event(events[i]));
  }
  size_t bytes = 0;
  size_t first = lines.size();
  while (first > 0 && bytes + lines[first - 1].size() + 1 <= max_bytes) bytes += lines[--first].size() + 1;
  if (first > 0) {
    *truncated = true;
    lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(first));
  }
  return lines;
}

std::optional<QueuePosition> Coordinator::position(TicketId t) const {
  if (!store_) return scheduler_->position(t);
  std::optional<QueuePosition> out;
  store_->read([&](const Scheduler& s) { out = s.position(t); });
  return out;
}

std::optional<Lease> Coordinator::lease(LeaseId id) const { return store_ ? store_->lease(id) : scheduler_->lease(id); }
std::vector<Lease> Coordinator::leases() const { return store_ ? store_->leases() : scheduler_->leases(); }
std::vector<ServerView> Coordinator::servers() const { return store_ ? store_->servers() : scheduler_->servers(); }

std::vector<QueuedView> Coordinator::queue() const {
  if (!store_) return scheduler_->queue();
  std::vector<QueuedView> out;
  store_->read([&](const Scheduler& s) { out = s.queue(); });
  return out;
}

}  // namespace rgpu::pool::service
