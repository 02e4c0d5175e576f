// Logging to stderr with a level read once from RGPU_LOG_LEVEL.
#include "rgpu/common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace rgpu::log {
namespace {

constexpr int kUnset = -1;
std::atomic<int> g_level{kUnset};
std::atomic<const char*> g_component{"rgpu"};

const char* level_name(Level l) {
  switch (l) {
    case Level::kError: return "error";
    case Level::kWarn: return "warn";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
    case Level::kTrace: return "trace";
  }
  return "?";
}

}  // namespace

bool parse_level(const std::string& text, Level* out) {
  static const char* names[] = {"error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 5; ++i) {
    if (text == names[i] || text == std::to_string(i)) {
      *out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

Level level() {
  int l = g_level.load(std::memory_order_relaxed);
  if (l != kUnset) return static_cast<Level>(l);
  Level parsed = Level::kWarn;
  if (const char* env = std::getenv("RGPU_LOG_LEVEL")) {
    if (!parse_level(env, &parsed)) parsed = Level::kWarn;
  }
  g_level.store(static_cast<int>(parsed), std::memory_order_relaxed);
  return parsed;
}

void set_level(Level l) { g_level.store(static_cast<int>(l), std::memory_order_relaxed); }
void set_component(const char* name) { g_component.store(name); }

void write(Level l, const char* file, int line, const char* fmt, ...) {
  char buf[2048];
  const char* base = std::strrchr(file, '/');
  int n = std::snprintf(buf, sizeof buf, "[%s %d %s] ", g_component.load(), static_cast<int>(getpid()),
                        level_name(l));
  va_list ap;
  va_start(ap, fmt);
  int m = std::vsnprintf(buf + n, sizeof buf - n - 2, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : std::min<size_t>(m, sizeof buf - n - 3));
  if (l >= Level::kDebug && base) {
    len += std::snprintf(buf + len, sizeof buf - len - 2, " (%s:%d)", base + 1, line);
    if (len > sizeof buf - 2) len = sizeof buf - 2;
  }
  buf[len++] = '\n';
  (void)!::write(2, buf, len);
}

}  // namespace rgpu::log
