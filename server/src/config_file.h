// rgpud's configuration file (rgpud --config FILE): the sharing options of
// the command line, in TOML (docs/sharing.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::server {

// What a configuration file says; unset fields leave the command line's
// value. Plain values.
struct ConfigFile {
  std::optional<std::string> device;            // device = "cpu"
  std::optional<uint64_t> cpu_devices;          // cpu-devices = 2
  std::optional<uint64_t> session_memory;       // session-memory = "1G" (or bytes)
  std::optional<uint64_t> max_sessions_per_slice;  // max-sessions-per-slice = 2
  // slices = ["1:512M@0.5,256M@0.25"], and each [[cut]] table, with
  // device = 1 and slices = [{ memory = "512M", share = 0.5 }, ...], as
  // --slices texts.
  std::vector<std::string> slices;
  std::optional<std::string> metrics;           // metrics = "127.0.0.1:9400" (--metrics)
};

// Parses TOML `text` (from `origin`, for messages). A syntax error, an
// unknown key, or a value of the wrong type is an error naming the key (and
// the line, for syntax).
Result<ConfigFile> parse_config(const std::string& text, const std::string& origin);
// Reads and parses `path`.
Result<ConfigFile> load_config(const std::string& path);

}  // namespace rgpu::server
