// pool.toml, read with toml++ (Debian's libtomlplusplus-dev).
#include "rgpu/pool/config.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "rgpu/common/toml.h"

namespace rgpu::pool {
namespace {

// Reads the keys of one table, refusing keys it does not know, so that a
// misspelt setting is an error rather than silently ignored.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string name, const std::string& where)
      : table_(table), name_(std::move(name)), where_(where) {}

  Status number(const char* key, double* out, double min, double max) {
    seen_.insert(key);
    const toml::node* n = table_.get(key);
    if (!n) return Status::ok();
    std::optional<double> v = n->value<double>();  // accepts integers too
    if (!v || !std::isfinite(*v) || *v < min || *v > max) {
      return bad(key, "expected a number in " + fmt(min) + ".." + fmt(max));
    }
    *out = *v;
    return Status::ok();
  }
  Status seconds(const char* key, Millis* out, double min, double max) {
    double s = static_cast<double>(*out) / 1000.0;
    Status st = number(key, &s, min, max);
    if (st.is_ok()) *out = static_cast<Millis>(std::llround(s * 1000.0));
    return st;
  }
  Status boolean(const char* key, bool* out) {
    seen_.insert(key);
    const toml::node* n = table_.get(key);
    if (!n) return Status::ok();
    if (!n->is_boolean()) return bad(key, "expected true or false");
    *out = n->value<bool>().value_or(*out);
    return Status::ok();
  }
  Status text(const char* key, std::string* out) {
    seen_.insert(key);
    const toml::node* n = table_.get(key);
    if (!n) return Status::ok();
    if (!n->is_string()) return bad(key, "expected a string");
    *out = n->value<std::string>().value_or("");
    return Status::ok();
  }
  // Call last: any key not read above is unknown.
  Status no_other_keys() const {
    for (auto&& [k, v] : table_) {
      if (!seen_.count(std::string(k.str()))) {
        return invalid_argument(where_ + ": unknown setting " + name_ + "." + std::string(k.str()));
      }
    }
    return Status::ok();
  }
  Status bad(const char* key, const std::string& what) const {
    return invalid_argument(where_ + ": " + name_ + "." + key + ": " + what);
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }
  const toml::table& table_;
  std::string name_;
  const std::string& where_;
  std::set<std::string> seen_;
};

const toml::table* subtable(const toml::table& root, const char* name, const std::string& where, Status* err) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) *err = invalid_argument(where + ": " + name + " must be a table ([" + name + "])");
  return n->as_table();
}

}  // namespace

const char* policy_name(Policy policy) {
  switch (policy) {
    case Policy::kBinpack: return "binpack";
    case Policy::kSpread: return "spread";
    case Policy::kLeastLoaded: return "least-loaded";
  }
  return "?";
}

Result<Policy> parse_policy(std::string_view text) {
  for (Policy p : {Policy::kBinpack, Policy::kSpread, Policy::kLeastLoaded}) {
    if (text == policy_name(p)) return p;
  }
  return invalid_argument("policy '" + std::string(text) + "': expected binpack, spread or least-loaded");
}

double PoolConfig::weight_of(std::string_view tenant) const {
  auto it = tenant_weights.find(tenant);
  return it == tenant_weights.end() ? default_weight : it->second;
}

Status validate(const PoolConfig& c) {
  if (c.heartbeat_interval_ms <= 0) return invalid_argument("heartbeat.interval_s must be positive");
  if (c.heartbeat_timeout_ms <= c.heartbeat_interval_ms) {
    return invalid_argument("heartbeat.timeout_s must be longer than heartbeat.interval_s");
  }
  if (c.lease_ttl_ms <= 0) return invalid_argument("scheduler.lease_ttl_s must be positive");
  if (c.queue_timeout_ms < 0) return invalid_argument("scheduler.queue_timeout_s must not be negative");
  if (!(c.default_weight > 0)) return invalid_argument("scheduler.default_weight must be positive");
  for (const auto& [tenant, w] : c.tenant_weights) {
    if (!(w > 0) || !std::isfinite(w)) return invalid_argument("tenants." + tenant + ".weight must be positive");
  }
  return Status::ok();
}

Result<PoolConfig> parse_config(std::string_view toml_text, const std::string& where) {
  auto parsed = parse_toml(toml_text, where);
  if (!parsed) return parsed.status();
  const toml::table& root = *parsed;
  PoolConfig c;
  Status err;
  if (const toml::table* t = subtable(root, "scheduler", where, &err)) {
    TableReader r(*t, "scheduler", where);
    std::string policy = policy_name(c.policy);
    double queue_s = static_cast<double>(c.queue_timeout_ms) / 1000.0;
    double ttl_s = static_cast<double>(c.lease_ttl_ms) / 1000.0;
    for (Status s : {r.text("policy", &policy), r.boolean("preemption", &c.preemption),
                     r.boolean("split_across_servers", &c.split_across_servers),
                     r.number("queue_timeout_s", &queue_s, 0, 365.0 * 86400),
                     r.number("lease_ttl_s", &ttl_s, 1, 365.0 * 86400),
                     r.number("default_weight", &c.default_weight, 1e-6, 1e6), r.no_other_keys()}) {
      if (!s.is_ok()) return s;
    }
    auto p = parse_policy(policy);
    if (!p.is_ok()) return invalid_argument(where + ": scheduler." + p.status().message());
    c.policy = p.value();
    c.queue_timeout_ms = static_cast<Millis>(std::llround(queue_s * 1000.0));
    c.lease_ttl_ms = static_cast<Millis>(std::llround(ttl_s * 1000.0));
  }
  if (!err.is_ok()) return err;
  if (const toml::table* t = subtable(root, "heartbeat", where, &err)) {
    TableReader r(*t, "heartbeat", where);
    for (Status s : {r.seconds("interval_s", &c.heartbeat_interval_ms, 0.001, 3600),
                     r.seconds("timeout_s", &c.heartbeat_timeout_ms, 0.001, 86400), r.no_other_keys()}) {
      if (!s.is_ok()) return s;
    }
  }
  if (!err.is_ok()) return err;
  if (const toml::table* t = subtable(root, "tenants", where, &err)) {
    for (auto&& [name, node] : *t) {
      const std::string tenant(name.str());
      if (!node.is_table()) return invalid_argument(where + ": tenants." + tenant + " must be a table");
      TableReader r(*node.as_table(), "tenants." + tenant, where);
      double w = c.default_weight;
      for (Status s : {r.number("weight", &w, 1e-6, 1e6), r.no_other_keys()}) {
        if (!s.is_ok()) return s;
      }
      c.tenant_weights[tenant] = w;
    }
  }
  if (!err.is_ok()) return err;
  Status v = validate(c);
  if (!v.is_ok()) return invalid_argument(where + ": " + v.message());
  return c;
}

Result<PoolConfig> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace rgpu::pool
