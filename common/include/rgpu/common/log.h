// Minimal structured logging: lower case, key=value, one line per event.
// The level comes from RGPU_LOG_LEVEL (error|warn|info|debug|trace), read once.
#pragma once

#include <cstdio>
#include <string>

namespace rgpu::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

// The current level; initialised from the environment on first use.
Level level();
void set_level(Level level);
// Parses "error", "warn", "info", "debug", "trace" (or 0..4); false if unknown.
bool parse_level(const std::string& text, Level* out);
// Sets a short tag printed on every line, e.g. "rgpud" or "client".
void set_component(const char* name);

void write(Level level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace rgpu::log

#define RGPU_LOG(lvl, ...)                                                    \
  do {                                                                        \
    if (static_cast<int>(::rgpu::log::Level::lvl) <=                          \
        static_cast<int>(::rgpu::log::level()))                               \
      ::rgpu::log::write(::rgpu::log::Level::lvl, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define RGPU_ERROR(...) RGPU_LOG(kError, __VA_ARGS__)
#define RGPU_WARN(...) RGPU_LOG(kWarn, __VA_ARGS__)
#define RGPU_INFO(...) RGPU_LOG(kInfo, __VA_ARGS__)
#define RGPU_DEBUG(...) RGPU_LOG(kDebug, __VA_ARGS__)
#define RGPU_TRACE(...) RGPU_LOG(kTrace, __VA_ARGS__)
