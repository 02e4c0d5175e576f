// The [history] table of pool.toml (see history.h).
#include <cmath>

#include "rgpu/common/toml.h"
#include "rgpu/pool/history.h"

namespace rgpu::pool {

Result<HistoryOptions> parse_history_config(std::string_view toml_text, const std::string& where) {
  auto parsed = parse_toml(toml_text, where);
  if (!parsed) return parsed.status();
  const toml::table& root = *parsed;
  HistoryOptions o;
  const toml::node* node = root.get("history");
  if (!node) return o;
  const toml::table* t = node->as_table();
  if (!t) return invalid_argument(where + ": history must be a table ([history])");
  auto bad = [&](const std::string& key, const std::string& what) {
    return invalid_argument(where + ": history." + key + ": " + what);
  };
  // A number of seconds (or units) in [min, max], scaled to an integer.
  auto number = [&](const std::string& key, const toml::node& n, double min, double max, double scale,
                    auto* out) -> Status {
    std::optional<double> v = n.value<double>();
    if (!v || !std::isfinite(*v) || *v < min || *v > max) {
      return bad(key, "expected a number in " + std::to_string(min) + ".." + std::to_string(max));
    }
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(std::llround(*v * scale));
    return Status::ok();
  };
  for (auto&& [k, n] : *t) {
    const std::string key(k.str());
    Status s;
    if (key == "file") {
      if (!n.is_string()) return bad(key, "expected a path (\"\": keep the history in memory only)");
      o.path = n.value<std::string>().value_or("");
    } else if (key == "memory_events") {
      s = number(key, n, 1000, 1e9, 1, &o.max_events);
    } else if (key == "max_file_mb") {
      s = number(key, n, 1, 1024 * 1024, 1024 * 1024, &o.max_file_bytes);
    } else if (key == "fsync_interval_s") {
      s = number(key, n, 0, 3600, 1000, &o.fsync_interval_ms);
    } else if (key == "sample_interval_s") {
      s = number(key, n, 1, 86400, 1000, &o.sample_interval_ms);
    } else {
      return invalid_argument(where + ": unknown setting history." + key);
    }
    if (!s.is_ok()) return s;
  }
  return o;
}

}  // namespace rgpu::pool
