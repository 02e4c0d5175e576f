// Metrics: counters, gauges and histograms with labels, kept in a Registry
// that renders them in Prometheus's text exposition format (docs/metrics.md).
//
// Recording is cheap and lock-free: a component looks its series up once
// (Family::with, which locks) and keeps the reference; Counter::add,
// Gauge::set and Histogram::observe are relaxed atomic operations on
// per-thread shards, with no allocation. Values that already live elsewhere
// (the sessions of a server, the slices of a device) are read when a scrape
// renders them, through a collector callback, instead of being copied on
// every change.
//
// Example (a pool daemon):
//
//   rgpu::metrics::Registry registry;                     // main() owns it
//   auto& queued = registry.gauge("rgpu_pool_queue_length", "Requests waiting.", {"tenant"});
//   auto& waits = registry.histogram("rgpu_pool_wait_seconds", "Time from request to placement.",
//                                    {"tenant"}, rgpu::metrics::latency_buckets());
//   auto& placed = registry.counter("rgpu_pool_placements_total", "Placements made.", {"kind"});
//   rgpu::metrics::Gauge& q = queued.with({"alice"});       // once, then keep it
//   q.add(1);
//   waits.with({"alice"}).observe(0.25);
//   placed.with({"gpu"}).add();
//   auto slots = registry.collect("rgpu_pool_servers", "Registered servers.", rgpu::metrics::Type::kGauge,
//                                 {"state"}, [&](rgpu::metrics::Sink& out) { out.add({"live"}, live_count()); });
//   auto http = rgpu::metrics::HttpExporter::start(registry, "127.0.0.1:9401");  // metrics_http.h
//
// Names and label names are the program's own constants: a malformed one,
// or a name registered again with another type or other labels, is a bug and
// throws std::logic_error at registration.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rgpu::metrics {

enum class Type { kCounter, kGauge, kHistogram };

// The shard of the calling thread: threads are spread over shards round
// robin, so that two threads that record into one series rarely share a
// cache line.
constexpr size_t kShards = 8;
size_t this_thread_shard();

// A monotonically increasing count. Thread-safe; add() is wait-free.
class Counter {
 public:
  void add(uint64_t n = 1) { shards_[this_thread_shard()].v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const;

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> v{0};
  };
  std::array<Shard, kShards> shards_;
};

// A value that goes up and down. Thread-safe; set() is wait-free, add() a
// compare-and-swap loop.
class Gauge {
 public:
  void set(double v) { v_.store(v, std::memory_order_relaxed); }
  void add(double d);
  double value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

// Observations counted into buckets with inclusive upper bounds (Prometheus's
// `le`), plus their sum and count. Thread-safe; observe() touches only the
// calling thread's shard.
class Histogram {
 public:
  // `bounds`: finite, strictly increasing (checked by the registry); +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  struct alignas(64) Shard {
    std::unique_ptr<std::atomic<uint64_t>[]> buckets;  // bounds_.size() + 1
    std::atomic<double> sum{0};
  };
  const std::vector<double> bounds_;
  std::array<Shard, kShards> shards_;
};

// Bounds for durations in seconds, from 10 µs to 10 s (18 buckets).
std::vector<double> latency_buckets();

// The label values of one series, in the order of its family's label names.
using LabelValues = std::vector<std::string>;

// The label value a family puts in every label of the one series that
// collects what arrives past its max_series.
inline constexpr std::string_view kOverflowValue = "_other";

// One metric name with its labels: its series are created on first use.
// Thread-safe. A reference from with() stays valid until remove() of those
// labels or the registry's end; keep it instead of looking it up per event.
template <class M>
class Family {
 public:
  // The series of `values` (one per label name). Past `max_series` distinct
  // series, new values all go to one series labelled kOverflowValue, so a
  // family's size stays bounded whatever the values.
  M& with(const LabelValues& values);
  // Forgets a series (for labels that name something gone). Nobody may use
  // its reference afterwards.
  void remove(const LabelValues& values);
  size_t size() const;

 private:
  friend class Registry;
  Family(std::vector<std::string> label_names, size_t max_series, std::vector<double> bounds)
      : label_names_(std::move(label_names)), max_series_(max_series), bounds_(std::move(bounds)) {}
  std::unique_ptr<M> make() const;

  const std::vector<std::string> label_names_;
  const size_t max_series_;
  const std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<M>> series_;

  template <class F>
  void for_each(F&& f) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [values, m] : series_) f(values, *m);
  }
};

// Where a collector writes the samples of its family during a scrape.
class Sink {
 public:
  virtual ~Sink() = default;
  // One sample; `values` as many as the family's label names.
  virtual void add(const LabelValues& values, double value) = 0;
};

class Registry;

// Keeps a collector registered; unregisters it when destroyed, waiting for
// a scrape that is running it. Movable. Destroy it before whatever the
// callback reads.
class Collection {
 public:
  Collection() = default;
  Collection(Collection&& other) noexcept : registry_(other.registry_), id_(other.id_) { other.registry_ = nullptr; }
  Collection& operator=(Collection&& other) noexcept;
  ~Collection() { reset(); }
  void reset();

 private:
  friend class Registry;
  Collection(Registry* registry, uint64_t id) : registry_(registry), id_(id) {}
  Registry* registry_ = nullptr;
  uint64_t id_ = 0;
};

struct FamilyOptions {
  size_t max_series = 10000;  // see Family::with
};

// Every metric of one process (or one component, for tests), rendered in
// registration order. No global instance: whoever records gets the registry
// (or its families) passed in. Thread-safe. It must outlive the references
// and collections handed out.
class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  ~Registry();

  Family<Counter>& counter(const std::string& name, const std::string& help, std::vector<std::string> labels,
                           FamilyOptions options = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help, std::vector<std::string> labels,
                       FamilyOptions options = {});
  Family<Histogram>& histogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                               std::vector<double> bounds, FamilyOptions options = {});
  // A family whose samples `collect` writes at each scrape (a counter or a
  // gauge). It runs on the scraping thread, under the registry's lock: it
  // must not call back into the registry and should be quick.
  [[nodiscard]] Collection collect(const std::string& name, const std::string& help, Type type,
                                   std::vector<std::string> labels, std::function<void(Sink&)> collect);

  // Every family in the text exposition format, version 0.0.4.
  std::string render() const;

 private:
  friend class Collection;
  struct Entry;
  Entry& add_entry(const std::string& name, const std::string& help, Type type, std::vector<std::string> labels);
  void remove_collector(uint64_t id);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
  uint64_t next_collector_ = 1;
};

// Text format pieces, for the registry and its tests.
namespace text {
// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label
// name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__").
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);
// A label value inside double quotes: \ " and newline escaped.
std::string escape_label_value(std::string_view value);
// A HELP text: \ and newline escaped.
std::string escape_help(std::string_view help);
// A sample value: the shortest text that reads back as `v`; +Inf, -Inf, NaN.
std::string format_value(double v);
}  // namespace text

}  // namespace rgpu::metrics
