// The metrics rgpud reads from its state at each scrape (docs/metrics.md):
// devices, slices and sessions. Nothing is copied on the hot path for them.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "rgpu/common/metrics.h"
#include "session.h"
#include "slices.h"

namespace rgpu::server {

// Sessions past this many get no series of their own (rgpu_sessions_unlisted
// counts them), so that a scrape's size stays bounded.
constexpr size_t kMaxSessionSeries = 64;

// What a scrape reads from the server, taken under its locks by `view`.
struct ServerView {
  std::vector<SliceTable::Slot> slots;
  std::vector<std::shared_ptr<Session>> sessions;  // by id
};

// Registers the collected families; they read `info`, `driver` and `view()`
// (called on the scraping thread) until the returned collections go, which
// must be before any of those.
std::vector<metrics::Collection> collect_server(metrics::Registry& registry, std::shared_ptr<const ServerInfo> info,
                                                std::shared_ptr<const DriverTable> driver,
                                                std::function<ServerView()> view);

}  // namespace rgpu::server
