// What rgpud records for operators (docs/metrics.md): the families a
// session counts its calls and copies into, and one session's view of them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "handshake.h"
#include "rgpu.capnp.h"
#include "rgpu/common/metrics.h"

namespace rgpu::server {

// The families, registered once per server. Thread-safe (the families are).
struct ServerMetrics {
  explicit ServerMetrics(metrics::Registry& registry);
  metrics::Family<metrics::Counter>& calls;            // {tenant, api, call}
  metrics::Family<metrics::Histogram>& call_seconds;   // {tenant, api, mode}
  metrics::Family<metrics::Counter>& copy_bytes;       // {device, slice, tenant, direction}
  metrics::Family<metrics::Counter>& sessions_opened;  // {tenant}
  metrics::Family<metrics::Counter>& refused;          // {reason}
  metrics::Family<metrics::Counter>& operator_requests;  // {command, outcome}
};

// The name of a typed call's kind in the schema ("memcpyHtoD"), or "unknown".
std::string_view call_kind_name(wire::Call::Which which);
// The same call as the CUDA API spells it ("cuLaunchKernel" for
// launchKernel), for the reasons of its errors; empty for `graph`, which
// carries many functions.
std::string call_api_name(wire::Call::Which which);
// The name of an API in the schema ("cublas"), or "unknown".
std::string_view api_name(wire::Api api);

// One session's recording. Its series are looked up on first use and kept,
// so a call costs a hash lookup and a few relaxed atomic adds. The record
// functions run only on the thread executing the session's calls (under its
// execution lock); the totals may be read from any thread.
class SessionMetrics {
 public:
  // `shared` null: nothing is recorded into families, only the totals.
  SessionMetrics(ServerMetrics* shared, std::string tenant, const std::vector<Placement>& devices);

  // A call of `api` named `name`; `key` names it uniquely and stably (its
  // dispatch row, or its kind) for the cache. `sync`: the client waited.
  void on_call(wire::Api api, std::string_view name, uintptr_t key, bool sync, double seconds);
  // A copy between the host and the session's device `ordinal`.
  void on_copy(uint32_t ordinal, bool to_device, uint64_t bytes);

  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  uint64_t bytes_to_device() const { return h2d_.load(std::memory_order_relaxed); }
  uint64_t bytes_to_host() const { return d2h_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kApis = 32;  // above every wire::Api ordinal
  ServerMetrics* const shared_;
  const std::string tenant_;
  std::unordered_map<uintptr_t, metrics::Counter*> calls_by_key_;
  std::array<metrics::Histogram*, kApis * 2> seconds_{};
  std::vector<std::array<metrics::Counter*, 2>> copies_;  // by ordinal: to device, to host
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> h2d_{0};
  std::atomic<uint64_t> d2h_{0};
};

}  // namespace rgpu::server
