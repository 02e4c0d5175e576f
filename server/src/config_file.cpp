// The configuration file: TOML through toml++ (header-only here, so rgpud
// links nothing more).
#include "config_file.h"

#include <cstdio>
#include <fstream>
#include <sstream>


#include "rgpu/common/request_text.h"
#include "rgpu/common/toml.h"

namespace rgpu::server {
namespace {

// A size as a string ("512M") or a whole number of bytes.
Result<uint64_t> size_value(const toml::node& node, const std::string& key) {
  if (auto text = node.value<std::string>()) {
    auto bytes = parse_size(*text);
    if (!bytes.is_ok()) return invalid_argument(key + ": " + bytes.status().message());
    return bytes.value();
  }
  if (node.is_integer()) {
    const int64_t v = *node.value<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return invalid_argument(key + " wants a size, as \"512M\" or a number of bytes");
}

Result<uint64_t> count_value(const toml::node& node, const std::string& key) {
  if (node.is_integer() && *node.value<int64_t>() >= 0) return static_cast<uint64_t>(*node.value<int64_t>());
  return invalid_argument(key + " wants a whole number");
}

// One [[cut]] table as a --slices text.
Result<std::string> cut_slices(const toml::table& cut, size_t n) {
  const std::string where = "[[cut]] number " + std::to_string(n + 1);
  std::string text;
  bool have_index = false;
  for (const auto& [key, node] : cut) {
    if (key == "device") {
      auto index = count_value(node, where + " device");
      if (!index.is_ok()) return index.status();
      text = std::to_string(index.value()) + ":" + text;
      have_index = true;
    } else if (key != "slices") {
      return invalid_argument(where + ": unknown key '" + std::string(key.str()) + "' (device, slices)");
    }
  }
  if (!have_index) return invalid_argument(where + " needs device = N");
  const toml::array* slices = cut["slices"].as_array();
  if (slices == nullptr || slices->empty()) return invalid_argument(where + " needs slices = [{ memory, share }, ...]");
  std::string cuts;
  for (const toml::node& s : *slices) {
    const toml::table* slice = s.as_table();
    if (slice == nullptr) return invalid_argument(where + ": each slice is { memory = SIZE, share = F }");
    std::string memory, share;
    for (const auto& [key, node] : *slice) {
      if (key == "memory") {
        auto bytes = size_value(node, where + " memory");
        if (!bytes.is_ok()) return bytes.status();
        memory = std::to_string(bytes.value());
      } else if (key == "share") {
        auto f = node.value<double>();
        if (!f) return invalid_argument(where + " share wants a number");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6f", *f);
        share = buf;
      } else {
        return invalid_argument(where + ": unknown slice key '" + std::string(key.str()) + "' (memory, share)");
      }
    }
    if (memory.empty() || share.empty()) return invalid_argument(where + ": each slice needs memory and share");
    cuts += (cuts.empty() ? "" : ",") + memory + "@" + share;
  }
  return text + cuts;
}

}  // namespace

Result<ConfigFile> parse_config(const std::string& text, const std::string& origin) {
  auto parsed = parse_toml(text, origin);
  if (!parsed) return parsed.status();
  const toml::table& root = *parsed;
  ConfigFile out;
  for (const auto& [key_view, node] : root) {
    const std::string key(key_view.str());
    if (key == "device") {
      auto v = node.value<std::string>();
      if (!v) return invalid_argument(origin + ": device wants \"cpu\", \"cuda\" or \"auto\"");
      out.device = *v;
    } else if (key == "cpu-devices") {
      auto v = count_value(node, origin + ": cpu-devices");
      if (!v.is_ok()) return v.status();
      out.cpu_devices = v.value();
    } else if (key == "session-memory") {
      auto v = size_value(node, origin + ": session-memory");
      if (!v.is_ok()) return v.status();
      out.session_memory = v.value();
    } else if (key == "max-sessions-per-slice") {
      auto v = count_value(node, origin + ": max-sessions-per-slice");
      if (!v.is_ok()) return v.status();
      out.max_sessions_per_slice = v.value();
    } else if (key == "slices") {
      const toml::array* list = node.as_array();
      if (list == nullptr) return invalid_argument(origin + ": slices wants a list of \"DEV:SIZE@SHARE,...\" texts");
      for (const toml::node& item : *list) {
        auto v = item.value<std::string>();
        if (!v) return invalid_argument(origin + ": slices wants a list of \"DEV:SIZE@SHARE,...\" texts");
        out.slices.push_back(*v);
      }
    } else if (key == "cut") {
      const toml::array* tables = node.as_array();
      if (tables == nullptr) return invalid_argument(origin + ": cut wants [[cut]] tables");
      for (size_t i = 0; i < tables->size(); ++i) {
        const toml::table* cut = (*tables)[i].as_table();
        if (cut == nullptr) return invalid_argument(origin + ": cut wants [[cut]] tables");
        auto text = cut_slices(*cut, i);
        if (!text.is_ok()) return invalid_argument(origin + ": " + text.status().message());
        out.slices.push_back(text.value());
      }
    } else if (key == "metrics") {
      auto v = node.value<std::string>();
      if (!v) return invalid_argument(origin + ": metrics wants \"HOST:PORT\" (docs/metrics.md)");
      out.metrics = *v;
    } else {
      return invalid_argument(origin + ": unknown key '" + key +
                              "' (device, cpu-devices, session-memory, max-sessions-per-slice, slices, [[cut]], "
                              "metrics)");
    }
  }
  return out;
}

Result<ConfigFile> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read the configuration file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace rgpu::server
