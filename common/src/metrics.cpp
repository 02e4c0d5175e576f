// The metric types, the registry and its rendering in the text exposition format.
#include "rgpu/common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace rgpu::metrics {

size_t this_thread_shard() {
  static std::atomic<size_t> next{0};
  thread_local const size_t shard = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shard;
}

uint64_t Counter::value() const {
  uint64_t total = 0;
  for (const Shard& s : shards_) total += s.v.load(std::memory_order_relaxed);
  return total;
}

void Gauge::add(double d) {
  double old = v_.load(std::memory_order_relaxed);
  while (!v_.compare_exchange_weak(old, old + d, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (Shard& s : shards_) {
    s.buckets = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
    for (size_t i = 0; i <= bounds_.size(); ++i) s.buckets[i].store(0, std::memory_order_relaxed);
  }
}

void Histogram::observe(double v) {
  // The first bound at or above v (le is inclusive); past them all, +Inf.
  const size_t bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  Shard& s = shards_[this_thread_shard()];
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  s.sum.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot out;
  std::vector<uint64_t> counts(bounds_.size() + 1, 0);
  for (const Shard& s : shards_) {
    for (size_t i = 0; i <= bounds_.size(); ++i) counts[i] += s.buckets[i].load(std::memory_order_relaxed);
    out.sum += s.sum.load(std::memory_order_relaxed);
  }
  uint64_t running = 0;
  for (uint64_t c : counts) {
    running += c;
    out.cumulative.push_back(running);
  }
  out.count = running;
  return out;
}

std::vector<double> latency_buckets() {
  return {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
          0.01,    0.025,    0.05,    0.1,    0.25,    0.5,    1,     2.5,    10};
}

// ---- families ----------------------------------------------------------------

template <>
std::unique_ptr<Counter> Family<Counter>::make() const {
  return std::make_unique<Counter>();
}
template <>
std::unique_ptr<Gauge> Family<Gauge>::make() const {
  return std::make_unique<Gauge>();
}
template <>
std::unique_ptr<Histogram> Family<Histogram>::make() const {
  return std::make_unique<Histogram>(bounds_);
}

template <class M>
M& Family<M>::with(const LabelValues& values) {
  if (values.size() != label_names_.size()) {
    throw std::logic_error("metrics: " + std::to_string(values.size()) + " label values for " +
                           std::to_string(label_names_.size()) + " labels");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = series_.find(values); it != series_.end()) return *it->second;
  if (series_.size() + 1 >= max_series_) {
    LabelValues other(label_names_.size(), std::string(kOverflowValue));
    auto& slot = series_[other];
    if (!slot) slot = make();
    return *slot;
  }
  auto& slot = series_[values];
  slot = make();
  return *slot;
}

template <class M>
void Family<M>::remove(const LabelValues& values) {
  std::lock_guard<std::mutex> lock(mu_);
  series_.erase(values);
}

template <class M>
size_t Family<M>::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_.size();
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- text format -------------------------------------------------------------

namespace text {

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

}  // namespace text

// ---- the registry ------------------------------------------------------------

struct Registry::Entry {
  std::string name;
  std::string help;
  Type type;
  std::vector<std::string> labels;
  std::unique_ptr<Family<Counter>> counters;
  std::unique_ptr<Family<Gauge>> gauges;
  std::unique_ptr<Family<Histogram>> histograms;
  uint64_t collector_id = 0;  // a collected family: its callback
  std::function<void(Sink&)> collect;
};

namespace {

const char* type_name(Type type) {
  switch (type) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

// `name{a="x",b="y"[,extra]}` (no braces without labels).
void write_series(std::string& out, const std::string& name, const std::vector<std::string>& labels,
                  const LabelValues& values, const std::string& extra = {}) {
  out += name;
  if (labels.empty() && extra.empty()) return;
  out += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i];
    out += "=\"";
    out += text::escape_label_value(i < values.size() ? values[i] : std::string());
    out += '"';
  }
  if (!extra.empty()) {
    if (!labels.empty()) out += ',';
    out += extra;
  }
  out += '}';
}

void write_sample(std::string& out, const std::string& name, const std::vector<std::string>& labels,
                  const LabelValues& values, double value, const std::string& extra = {}) {
  write_series(out, name, labels, values, extra);
  out += ' ';
  out += text::format_value(value);
  out += '\n';
}

// Counts are written as whole numbers: a double would round them past 2^53.
void write_count(std::string& out, const std::string& name, const std::vector<std::string>& labels,
                 const LabelValues& values, uint64_t value, const std::string& extra = {}) {
  write_series(out, name, labels, values, extra);
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

class StringSink final : public Sink {
 public:
  StringSink(std::string& out, const std::string& name, const std::vector<std::string>& labels)
      : out_(out), name_(name), labels_(labels) {}
  void add(const LabelValues& values, double value) override {
    if (values.size() != labels_.size()) return;  // the collector's bug; skipped rather than misrendered
    write_sample(out_, name_, labels_, values, value);
  }

 private:
  std::string& out_;
  const std::string& name_;
  const std::vector<std::string>& labels_;
};

}  // namespace

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Entry& Registry::add_entry(const std::string& name, const std::string& help, Type type,
                                     std::vector<std::string> labels) {
  if (!text::valid_metric_name(name)) throw std::logic_error("metrics: invalid metric name '" + name + "'");
  for (const std::string& l : labels) {
    if (!text::valid_label_name(l) || (type == Type::kHistogram && l == "le")) {
      throw std::logic_error("metrics: invalid label name '" + l + "' of " + name);
    }
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i] == labels[j]) throw std::logic_error("metrics: label '" + labels[i] + "' twice in " + name);
    }
  }
  for (auto& e : entries_) {
    if (e->name != name) continue;
    if (e->type != type || e->labels != labels || e->collect) {
      throw std::logic_error("metrics: " + name + " registered again with another type or labels");
    }
    return *e;
  }
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->help = help;
  entry->type = type;
  entry->labels = std::move(labels);
  entries_.push_back(std::move(entry));
  return *entries_.back();
}

Family<Counter>& Registry::counter(const std::string& name, const std::string& help, std::vector<std::string> labels,
                                   FamilyOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = add_entry(name, help, Type::kCounter, std::move(labels));
  if (!e.counters) e.counters.reset(new Family<Counter>(e.labels, options.max_series, {}));
  return *e.counters;
}

Family<Gauge>& Registry::gauge(const std::string& name, const std::string& help, std::vector<std::string> labels,
                               FamilyOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = add_entry(name, help, Type::kGauge, std::move(labels));
  if (!e.gauges) e.gauges.reset(new Family<Gauge>(e.labels, options.max_series, {}));
  return *e.gauges;
}

Family<Histogram>& Registry::histogram(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels, std::vector<double> bounds,
                                       FamilyOptions options) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      throw std::logic_error("metrics: bounds of " + name + " must be finite and increasing");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = add_entry(name, help, Type::kHistogram, std::move(labels));
  if (!e.histograms) {
    e.histograms.reset(new Family<Histogram>(e.labels, options.max_series, std::move(bounds)));
  } else if (e.histograms->bounds_ != bounds) {
    throw std::logic_error("metrics: " + name + " registered again with other bounds");
  }
  return *e.histograms;
}

Collection Registry::collect(const std::string& name, const std::string& help, Type type,
                             std::vector<std::string> labels, std::function<void(Sink&)> collect) {
  if (type == Type::kHistogram) throw std::logic_error("metrics: collected families are counters or gauges");
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : entries_) {
    if (e->name == name) throw std::logic_error("metrics: " + name + " registered twice");
  }
  Entry& e = add_entry(name, help, type, std::move(labels));
  e.collector_id = next_collector_++;
  e.collect = std::move(collect);
  return Collection(this, e.collector_id);
}

void Registry::remove_collector(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(entries_, [id](const std::unique_ptr<Entry>& e) { return e->collector_id == id; });
}

Collection& Collection::operator=(Collection&& other) noexcept {
  if (this != &other) {
    reset();
    registry_ = other.registry_;
    id_ = other.id_;
    other.registry_ = nullptr;
  }
  return *this;
}

void Collection::reset() {
  if (registry_ != nullptr) registry_->remove_collector(id_);
  registry_ = nullptr;
}

std::string Registry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) {
    out += "# HELP " + e->name + ' ' + text::escape_help(e->help) + '\n';
    out += "# TYPE " + e->name + ' ' + type_name(e->type) + '\n';
    if (e->collect) {
      StringSink sink(out, e->name, e->labels);
      e->collect(sink);
    } else if (e->counters) {
      e->counters->for_each([&](const LabelValues& v, const Counter& c) {
        write_count(out, e->name, e->labels, v, c.value());
      });
    } else if (e->gauges) {
      e->gauges->for_each([&](const LabelValues& v, const Gauge& g) { write_sample(out, e->name, e->labels, v, g.value()); });
    } else if (e->histograms) {
      e->histograms->for_each([&](const LabelValues& v, const Histogram& h) {
        const Histogram::Snapshot s = h.snapshot();
        const std::string bucket = e->name + "_bucket";
        for (size_t i = 0; i < s.cumulative.size(); ++i) {
          const std::string le =
              "le=\"" + (i < h.bounds().size() ? text::format_value(h.bounds()[i]) : std::string("+Inf")) + '"';
          write_count(out, bucket, e->labels, v, s.cumulative[i], le);
        }
        write_sample(out, e->name + "_sum", e->labels, v, s.sum);
        write_count(out, e->name + "_count", e->labels, v, s.count);
      });
    }
  }
  return out;
}

}  // namespace rgpu::metrics
