// One history event per line of JSON, both ways (the format is in
// docs/pool.md, "Usage history"). Decoding is of untrusted text: every field
// is checked for presence, type and range, and any problem is an error
// return for that line alone.
#include <cmath>
#include <nlohmann/json.hpp>

#include "rgpu/pool/history.h"

namespace rgpu::pool {
namespace {

using nlohmann::json;

json encode_body(const PoolStarted&) { return json{{"e", "start"}}; }

json encode_body(const ServerSeen& s) {
  json devs = json::array();
  for (const auto& d : s.devices) devs.push_back({{"d", d.index}, {"kind", d.kind}, {"memory", d.memory_bytes}});
  return json{{"e", "server"}, {"server", s.server}, {"devices", std::move(devs)}};
}

json encode_body(const LeaseGranted& g) {
  json devs = json::array();
  for (const auto& d : g.devices) {
    devs.push_back({{"server", d.server}, {"d", d.device}, {"slice", d.slice}, {"memory", d.memory_bytes},
                    {"share", d.share}});
  }
  return json{{"e", "grant"},          {"lease", g.lease},   {"tenant", g.tenant},
              {"priority", g.priority}, {"waited_ms", g.waited_ms}, {"devices", std::move(devs)}};
}

json encode_body(const LeaseEnded& e) { return json{{"e", "end"}, {"lease", e.lease}, {"reason", e.reason}}; }

json encode_body(const RequestGaveUp& g) {
  return json{{"e", "gave_up"}, {"tenant", g.tenant}, {"waited_ms", g.waited_ms}};
}

json encode_body(const UtilizationSample& u) {
  json devs = json::array();
  for (const auto& d : u.devices) devs.push_back({{"d", d.device}, {"u", d.utilization}, {"m", d.memory_used_bytes}});
  return json{{"e", "util"}, {"server", u.server}, {"span_ms", u.span_ms}, {"devices", std::move(devs)}};
}

json encode_body(const QueueSample& q) {
  return json{{"e", "queue"}, {"queued", q.queued}, {"tenants", q.by_tenant}};
}

// Typed, checked reads of one object's fields; the first failure is kept.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  const json* get(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      fail(std::string("missing ") + key);
      return nullptr;
    }
    return &*it;
  }
  template <class T>
  T integer(const char* key, T min, T max) {
    const json* v = get(key);
    if (!v) return min;
    if (!v->is_number_integer()) return fail(std::string(key) + " is not a whole number"), min;
    // Signed and unsigned are read apart, so a huge unsigned is not
    // mistaken for a negative number.
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) return fail(std::string(key) + " out of range"), min;
      return static_cast<T>(u);
    }
    const int64_t s = v->get<int64_t>();
    if (s < static_cast<int64_t>(min) || (s > 0 && static_cast<uint64_t>(s) > static_cast<uint64_t>(max))) {
      return fail(std::string(key) + " out of range"), min;
    }
    return static_cast<T>(s);
  }
  double number(const char* key, double min, double max) {
    const json* v = get(key);
    if (!v) return min;
    if (!v->is_number()) return fail(std::string(key) + " is not a number"), min;
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < min || d > max) return fail(std::string(key) + " out of range"), min;
    return d;
  }
  std::string text(const char* key, size_t max_len = 256) {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_string()) return fail(std::string(key) + " is not a string"), std::string();
    std::string s = v->get<std::string>();
    if (s.size() > max_len) return fail(std::string(key) + " too long"), std::string();
    return s;
  }
  const json* list(const char* key) {
    const json* v = get(key);
    if (!v) return nullptr;
    if (!v->is_array()) return fail(std::string(key) + " is not a list"), nullptr;
    if (v->size() > kMaxHistoryDevices) return fail(std::string(key) + " too long"), nullptr;
    return v;
  }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  const std::string& error() const { return error_; }

 private:
  const json& j_;
  std::string error_;
};

// Applies `each` to every element of a list, which must all be objects.
template <class F>
void each_object(Fields& f, const json* list, F&& each) {
  if (!list) return;
  for (const json& item : *list) {
    if (!item.is_object()) return f.fail("a list item is not an object");
    Fields g(item);
    each(g);
    if (!g.error().empty()) return f.fail(g.error());
  }
}

constexpr Millis kMaxMillis = int64_t{1} << 53;  // beyond any clock, and exact in a double

}  // namespace

std::string encode_event(const HistoryEvent& event) {
  // "e" and "t" first, for people reading the file.
  nlohmann::ordered_json j;
  const json body = std::visit([](const auto& b) { return encode_body(b); }, event.body);
  j["e"] = body.at("e");
  j["t"] = event.t;
  for (const auto& [key, value] : body.items()) {
    if (key != "e") j[key] = value;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<HistoryEvent> decode_event(std::string_view line) {
  if (line.size() > kMaxHistoryLine) return invalid_argument("line too long");
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("not JSON");
  if (!j.is_object()) return invalid_argument("not a JSON object");
  Fields f(j);
  HistoryEvent ev;
  ev.t = f.integer<Millis>("t", 0, kMaxMillis);
  const std::string kind = f.text("e", 32);
  if (!f.error().empty()) return invalid_argument(f.error());
  if (kind == "start") {
    ev.body = PoolStarted{};
  } else if (kind == "server") {
    ServerSeen s;
    s.server = f.text("server");
    each_object(f, f.list("devices"), [&](Fields& d) {
      s.devices.push_back({d.integer<uint32_t>("d", 0, UINT32_MAX), d.text("kind"),
                           d.integer<uint64_t>("memory", 0, UINT64_MAX)});
    });
    ev.body = std::move(s);
  } else if (kind == "grant") {
    LeaseGranted g;
    g.lease = f.integer<LeaseId>("lease", 0, UINT64_MAX);
    g.tenant = f.text("tenant", kMaxTenantName);
    g.priority = f.integer<int32_t>("priority", INT32_MIN, INT32_MAX);
    g.waited_ms = f.integer<Millis>("waited_ms", 0, kMaxMillis);
    each_object(f, f.list("devices"), [&](Fields& d) {
      g.devices.push_back({d.text("server"), d.integer<uint32_t>("d", 0, UINT32_MAX),
                           d.integer<uint32_t>("slice", 0, UINT32_MAX), d.integer<uint64_t>("memory", 0, UINT64_MAX),
                           d.number("share", 0.0, 1.0)});
    });
    ev.body = std::move(g);
  } else if (kind == "end") {
    ev.body = LeaseEnded{f.integer<LeaseId>("lease", 0, UINT64_MAX), f.text("reason", 32)};
  } else if (kind == "gave_up") {
    RequestGaveUp g;
    g.tenant = f.text("tenant", kMaxTenantName);
    g.waited_ms = f.integer<Millis>("waited_ms", 0, kMaxMillis);
    ev.body = std::move(g);
  } else if (kind == "util") {
    UtilizationSample u;
    u.server = f.text("server");
    u.span_ms = f.integer<Millis>("span_ms", 0, kMaxMillis);
    each_object(f, f.list("devices"), [&](Fields& d) {
      u.devices.push_back({d.integer<uint32_t>("d", 0, UINT32_MAX), d.number("u", 0.0, 1.0),
                           d.integer<uint64_t>("m", 0, UINT64_MAX)});
    });
    ev.body = std::move(u);
  } else if (kind == "queue") {
    QueueSample q;
    q.queued = f.integer<uint64_t>("queued", 0, UINT64_MAX);
    const json* tenants = f.get("tenants");
    if (tenants && (!tenants->is_object() || tenants->size() > kMaxHistoryDevices)) {
      f.fail("tenants is not a small object");
    } else if (tenants) {
      for (const auto& [name, n] : tenants->items()) {
        if (!n.is_number_unsigned() || name.size() > kMaxTenantName) {
          f.fail("tenants holds a bad count");
          break;
        }
        q.by_tenant[name] = n.get<uint64_t>();
      }
    }
    ev.body = std::move(q);
  } else {
    return invalid_argument("unknown event '" + kind + "'");
  }
  if (!f.error().empty()) return invalid_argument(kind + ": " + f.error());
  return ev;
}

void read_history_text(std::string_view text, HistoryRead* into) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      // A last line without its newline is a write cut short by a crash:
      // expected, so not counted as skipped.
      into->torn_tail = true;
      ++into->lines;
      break;
    }
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++into->lines;
    if (line.empty()) continue;
    auto ev = decode_event(line);
    if (ev.is_ok()) {
      into->events.push_back(std::move(ev).value());
    } else {
      if (into->skipped == 0) into->first_error = "line " + std::to_string(into->lines) + ": " + ev.status().message();
      ++into->skipped;
    }
  }
}

}  // namespace rgpu::pool
