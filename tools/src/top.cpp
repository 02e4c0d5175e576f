// rgpu top: scrapes each endpoint every interval and redraws one screen:
// per server its devices, slices and sessions, with rates from the last two
// scrapes. 'q' quits.
#include "top.h"

#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/common/metrics_text.h"
#include "text.h"

namespace rgpu::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxPageBytes = size_t{16} << 20;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: rgpu top [--metrics URL[,URL...]] [--interval SECONDS]\n"
               "\n"
               "Shows, refreshed every interval (default 1 s), what each rgpud /metrics endpoint\n"
               "says: devices (memory used / total, utilization), slices (memory used / quota,\n"
               "share, sessions) and sessions (tenant, program, memory, calls and bytes per\n"
               "second). URL: http://HOST:PORT[/metrics] or HOST:PORT; several, comma-separated\n"
               "or --metrics given again. Default: RGPU_METRICS. Press q to quit.\n");
}

struct Endpoint {
  std::string text;  // as given
  std::string host;
  int port = 0;
  std::string path = "/metrics";
};

bool parse_url(const std::string& url, Endpoint* out) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    out->path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  out->host = rest.substr(0, colon);
  if (out->host.front() == '[' && out->host.back() == ']') out->host = out->host.substr(1, out->host.size() - 2);
  char* end = nullptr;
  const long port = std::strtol(rest.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) return false;
  out->port = static_cast<int>(port);
  out->text = url;
  return true;
}

// One session's counters at one scrape.
struct Totals {
  double calls = 0, h2d = 0, d2h = 0;
  Clock::time_point at;
};

// What one endpoint said at its last scrape, and the session totals before.
struct ServerState {
  std::string error;  // the last scrape's failure, if it failed
  std::vector<metrics::Sample> samples;
  std::map<std::string, Totals> last, previous;  // by session id
};

std::string fetch(const Endpoint& e, std::string* body) {
  httplib::Client client(e.host, e.port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  body->clear();
  bool too_big = false;
  auto res = client.Get(e.path, [&](const char* data, size_t n) {
    if (body->size() + n > kMaxPageBytes) {
      too_big = true;
      return false;
    }
    body->append(data, n);
    return true;
  });
  if (too_big) return "page larger than 16 MiB";
  if (!res) return "unreachable (" + httplib::to_string(res.error()) + ")";
  if (res->status != 200) return "HTTP " + std::to_string(res->status);
  return "";
}

void scrape(const Endpoint& e, ServerState* s) {
  std::string body;
  s->error = fetch(e, &body);
  if (!s->error.empty()) return;
  auto parsed = metrics::parse_text(body);
  if (!parsed.is_ok()) {
    s->error = parsed.status().message();
    return;
  }
  s->samples = std::move(parsed.value());
  s->previous = std::move(s->last);
  s->last.clear();
  const auto now = Clock::now();
  for (const auto& m : s->samples) {
    const std::string& id = m.label("session");
    if (id.empty()) continue;
    Totals& t = s->last[id];
    t.at = now;
    if (m.name == "rgpu_session_calls_total") t.calls = m.value;
    if (m.name == "rgpu_session_copy_bytes_total") {
      (m.label("direction") == "host_to_device" ? t.h2d : t.d2h) = m.value;
    }
  }
}

// The value of the sample `name` whose labels include all of `match`.
double value_of(const ServerState& s, const std::string& name,
                const std::vector<std::pair<std::string, std::string>>& match, double missing = NAN) {
  for (const auto& m : s.samples) {
    if (m.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) ok = ok && m.label(k) == v;
    if (ok) return m.value;
  }
  return missing;
}

std::string percent(double ratio) {
  if (std::isnan(ratio)) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", ratio * 100);
  return buf;
}

std::string render(const std::vector<Endpoint>& endpoints, const std::vector<ServerState>& states, double interval) {
  std::string out;
  char line[512];
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::snprintf(line, sizeof line, "rgpu top  %s  every %.3gs  (q quits)\n", when, interval);
  out += line;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const ServerState& s = states[i];
    out += "\nserver " + endpoints[i].text;
    if (!s.error.empty()) {
      out += "  " + s.error + "\n";
      continue;
    }
    std::string version;
    size_t sessions = 0;
    for (const auto& m : s.samples) {
      if (m.name == "rgpu_build_info") version = m.label("version");
      if (m.name == "rgpu_sessions") sessions += static_cast<size_t>(m.value);
    }
    std::snprintf(line, sizeof line, "  rgpud %s  sessions %zu\n", version.empty() ? "?" : version.c_str(), sessions);
    out += line;
    std::snprintf(line, sizeof line, "  %-7s %-24s %-23s %6s %8s\n", "DEVICE", "NAME", "MEMORY USED/TOTAL", "UTIL",
                  "MEM-UTIL");
    out += line;
    for (const auto& m : s.samples) {
      if (m.name != "rgpu_device_info") continue;
      const std::string& d = m.label("device");
      const std::string mem = human_bytes(value_of(s, "rgpu_device_memory_used_bytes", {{"device", d}}, 0)) + " / " +
                              human_bytes(value_of(s, "rgpu_device_memory_total_bytes", {{"device", d}}, 0));
      std::snprintf(line, sizeof line, "  %-7s %-24.24s %-23s %6s %8s\n", d.c_str(), m.label("name").c_str(),
                    mem.c_str(), percent(value_of(s, "rgpu_device_utilization_ratio", {{"device", d}})).c_str(),
                    percent(value_of(s, "rgpu_device_memory_utilization_ratio", {{"device", d}})).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "  %-7s %-23s %6s %9s\n", "SLICE", "MEMORY USED/QUOTA", "SHARE", "SESSIONS");
    out += line;
    for (const auto& m : s.samples) {
      if (m.name != "rgpu_slice_memory_quota_bytes") continue;
      const std::vector<std::pair<std::string, std::string>> key = {{"device", m.label("device")},
                                                                    {"slice", m.label("slice")}};
      const std::string name = m.label("device") + "." + m.label("slice");
      const std::string mem =
          human_bytes(value_of(s, "rgpu_slice_memory_used_bytes", key, 0)) + " / " + human_bytes(m.value);
      std::snprintf(line, sizeof line, "  %-7s %-23s %6.2f %9.0f\n", name.c_str(), mem.c_str(),
                    value_of(s, "rgpu_slice_share", key, 1), value_of(s, "rgpu_slice_sessions", key, 0));
      out += line;
    }
    std::snprintf(line, sizeof line, "  %-8s %-12s %-20s %-8s %10s %10s %12s %12s\n", "SESSION", "TENANT", "PROGRAM",
                  "DEVICES", "MEMORY", "CALLS/S", "H2D/S", "D2H/S");
    out += line;
    for (const auto& m : s.samples) {
      if (m.name != "rgpu_session_info") continue;
      const std::string& id = m.label("session");
      std::string calls = "-", h2d = "-", d2h = "-";
      auto last = s.last.find(id);
      auto prev = s.previous.find(id);
      if (last != s.last.end() && prev != s.previous.end()) {
        const double dt = std::chrono::duration<double>(last->second.at - prev->second.at).count();
        if (dt > 0) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.1f", (last->second.calls - prev->second.calls) / dt);
          calls = buf;
          h2d = human_bytes((last->second.h2d - prev->second.h2d) / dt) + "/s";
          d2h = human_bytes((last->second.d2h - prev->second.d2h) / dt) + "/s";
        }
      }
      std::string program = m.label("program");
      if (const size_t slash = program.rfind('/'); slash != std::string::npos) program = program.substr(slash + 1);
      std::snprintf(line, sizeof line, "  %-8s %-12.12s %-20.20s %-8.8s %10s %10s %12s %12s\n", id.c_str(),
                    m.label("tenant").c_str(), program.c_str(), m.label("devices").c_str(),
                    human_bytes(value_of(s, "rgpu_session_memory_used_bytes", {{"session", id}}, 0)).c_str(),
                    calls.c_str(), h2d.c_str(), d2h.c_str());
      out += line;
    }
    const double unlisted = value_of(s, "rgpu_sessions_unlisted", {}, 0);
    if (unlisted > 0) {
      std::snprintf(line, sizeof line, "  (%.0f more sessions not listed)\n", unlisted);
      out += line;
    }
  }
  return out;
}

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// The terminal in non-canonical mode without echo while top runs, so that
// one key press is read at once; restored on exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (!isatty(0) || tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(0, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

}  // namespace

int run_top(int argc, char** argv) {
  std::vector<Endpoint> endpoints;
  double interval = 1;
  auto add_urls = [&](const std::string& list) {
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = list.find(',', start);
      const std::string url = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!url.empty()) {
        Endpoint e;
        if (!parse_url(url, &e)) {
          std::fprintf(stderr, "rgpu top: cannot read the metrics URL '%s'\n", url.c_str());
          return false;
        }
        endpoints.push_back(e);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return true;
  };
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--metrics" && i + 1 < argc) {
      if (!add_urls(argv[++i])) return 2;
    } else if (arg == "--interval" && i + 1 < argc) {
      char* end = nullptr;
      interval = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(interval >= 0.1 && interval <= 3600)) {
        std::fprintf(stderr, "rgpu top: --interval wants seconds from 0.1 to 3600\n");
        return 2;
      }
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "rgpu top: unknown option '%s'\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (endpoints.empty()) {
    const char* env = std::getenv("RGPU_METRICS");
    if (env == nullptr || *env == '\0') {
      std::fprintf(stderr, "rgpu top: no endpoint: give --metrics URL or set RGPU_METRICS\n");
      return 2;
    }
    if (!add_urls(env)) return 2;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  RawTerminal terminal;
  std::vector<ServerState> states(endpoints.size());
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
  auto next = Clock::now();
  while (!g_stop) {
    for (size_t i = 0; i < endpoints.size(); ++i) scrape(endpoints[i], &states[i]);
    const std::string frame = render(endpoints, states, interval);
    std::fputs("\x1b[H\x1b[2J", stdout);  // home, clear
    std::fputs(frame.c_str(), stdout);
    std::fflush(stdout);
    next += period;
    // Wait for the next frame, or a key.
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
      if (left <= 0 || g_stop) break;
      pollfd p{0, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char key = 0;
      const ssize_t n = read(0, &key, 1);
      if (n <= 0) {  // stdin closed or unreadable: keep drawing, stop listening for keys
        std::this_thread::sleep_for(std::chrono::milliseconds(left));
        continue;
      }
      if (n == 1 && (key == 'q' || key == 'Q')) return 0;
    }
  }
  return 0;
}

}  // namespace rgpu::tools
