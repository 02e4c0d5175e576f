// rgpud's metric families and a session's cached series in them.
#include "server_metrics.h"

#include <cctype>

#include <capnp/schema.h>

namespace rgpu::server {

ServerMetrics::ServerMetrics(metrics::Registry& r)
    : calls(r.counter("rgpu_calls_total", "Calls executed, by tenant, API and call (the function's name).",
                      {"tenant", "api", "call"})),
      call_seconds(r.histogram("rgpu_call_duration_seconds",
                               "Time rgpud spent executing a call (issuing it, for async work), by tenant, API "
                               "and mode (sync: the client waited for the reply; async: it did not).",
                               {"tenant", "api", "mode"}, metrics::latency_buckets())),
      copy_bytes(r.counter("rgpu_copy_bytes_total",
                           "Bytes of copies between client memory and device memory, by the server's device, "
                           "slice, tenant and direction (host_to_device, device_to_host).",
                           {"device", "slice", "tenant", "direction"})),
      sessions_opened(r.counter("rgpu_sessions_opened_total", "Sessions admitted, by tenant.", {"tenant"})),
      refused(r.counter("rgpu_connections_refused_total",
                        "Connections refused, by reason (handshake, full, no_slice, unauthenticated_limit).",
                        {"reason"})),
      operator_requests(r.counter("rgpu_operator_requests_total",
                                  "Operator requests that proved the admin key, by command (list_sessions, "
                                  "end_session) and outcome (done, refused).",
                                  {"command", "outcome"})) {}

namespace {

// Names by ordinal, read once from the schema, so that calls and APIs added
// to it later are named without a list here.
std::vector<std::string> union_names() {
  std::vector<std::string> names;
  for (auto field : capnp::Schema::from<wire::Call>().getUnionFields()) {
    const uint16_t d = field.getProto().getDiscriminantValue();
    if (names.size() <= d) names.resize(d + 1, "unknown");
    names[d] = field.getProto().getName().cStr();
  }
  return names;
}

std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (auto e : capnp::Schema::from<wire::Api>().getEnumerants()) names.push_back(e.getProto().getName().cStr());
  return names;
}

}  // namespace

std::string_view call_kind_name(wire::Call::Which which) {
  static const std::vector<std::string> names = union_names();
  const size_t i = static_cast<size_t>(which);
  return i < names.size() ? std::string_view(names[i]) : std::string_view("unknown");
}

std::string call_api_name(wire::Call::Which which) {
  // One member carries many functions (graphs, capture, virtual memory):
  // the reason of its failure names its own.
  if (which == wire::Call::GRAPH) return {};
  const std::string_view kind = call_kind_name(which);
  std::string name = "cu";
  name += kind;
  if (name.size() > 2) name[2] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[2])));
  return name;
}

std::string_view api_name(wire::Api api) {
  static const std::vector<std::string> names = enum_names();
  const size_t i = static_cast<size_t>(api);
  return i < names.size() ? std::string_view(names[i]) : std::string_view("unknown");
}

SessionMetrics::SessionMetrics(ServerMetrics* shared, std::string tenant, const std::vector<Placement>& devices)
    : shared_(shared), tenant_(std::move(tenant)) {
  if (shared_ == nullptr) return;
  for (const Placement& p : devices) {
    const std::string device = std::to_string(p.device);
    const std::string slice = p.slice < 0 ? "whole" : std::to_string(p.slice);
    copies_.push_back({&shared_->copy_bytes.with({device, slice, tenant_, "host_to_device"}),
                       &shared_->copy_bytes.with({device, slice, tenant_, "device_to_host"})});
  }
}

void SessionMetrics::on_call(wire::Api api, std::string_view name, uintptr_t key, bool sync, double seconds) {
  calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  if (shared_ == nullptr) return;
  metrics::Counter*& counter = calls_by_key_[key];
  if (counter == nullptr) {
    counter = &shared_->calls.with({tenant_, std::string(api_name(api)), std::string(name)});
  }
  counter->add();
  const size_t a = std::min<size_t>(static_cast<size_t>(api), kApis - 1);
  metrics::Histogram*& h = seconds_[a * 2 + (sync ? 1 : 0)];
  if (h == nullptr) h = &shared_->call_seconds.with({tenant_, std::string(api_name(api)), sync ? "sync" : "async"});
  h->observe(seconds);
}

void SessionMetrics::on_copy(uint32_t ordinal, bool to_device, uint64_t bytes) {
  std::atomic<uint64_t>& total = to_device ? h2d_ : d2h_;
  total.store(total.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  if (ordinal < copies_.size()) copies_[ordinal][to_device ? 0 : 1]->add(bytes);
}

}  // namespace rgpu::server
