// Small helpers shared by the benchmark programs: arguments, statistics and
// JSON output. Header-only; benchmarks only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace rgpu::bench {

// A flat JSON object built field by field (values: strings, numbers, arrays
// of objects). Not thread-safe.
class Json {
 public:
  Json& add(const std::string& key, const std::string& value) { return raw(key, quote(value)); }
  Json& add(const std::string& key, const char* value) { return raw(key, quote(value)); }
  Json& add(const std::string& key, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    return raw(key, buf);
  }
  Json& add(const std::string& key, uint64_t value) { return raw(key, std::to_string(value)); }
  Json& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  Json& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  Json& add_array(const std::string& key, const std::vector<Json>& items) {
    std::string v = "[";
    for (size_t i = 0; i < items.size(); ++i) v += (i ? "," : "") + items[i].str();
    return raw(key, v + "]");
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  Json& raw(const std::string& key, const std::string& value) {
    body_ += (body_.empty() ? "" : ",") + quote(key) + ":" + value;
    return *this;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out + "\"";
  }
  std::string body_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// p50, p99, p99.9 and mean of samples in microseconds.
inline void add_percentiles(Json& j, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  j.add("p50_us", percentile(us, 0.5)).add("p99_us", percentile(us, 0.99)).add("p999_us", percentile(us, 0.999));
  j.add("mean_us", us.empty() ? 0.0 : sum / static_cast<double>(us.size()));
}

inline std::string ucx_tls() {
  const char* t = std::getenv("UCX_TLS");
  return t ? t : "(UCX default)";
}

// The defaults rgpu's transport applies (transport/src/ucx_core.cpp) unless
// the environment sets them: shared memory under peer error handling, and
// rendezvous by get_zcopy.
inline void apply_rgpu_ucx_defaults() {
  const char* tls = std::getenv("UCX_TLS");
  const std::string t = tls ? tls : "";
  const bool shm = t.empty() || t[0] == '^' || t.find("posix") != std::string::npos ||
                   t.find("sysv") != std::string::npos || t.find("sm") != std::string::npos ||
                   t.find("all") != std::string::npos;
  if (shm) setenv("UCX_MM_ERROR_HANDLING", "y", 0);
  setenv("UCX_RNDV_SCHEME", "get_zcopy", 0);
}

// Command line: MODE [--key value]... [--smoke] [--json FILE].
struct Args {
  Args(int argc, char** argv) {
    if (argc > 1) mode = argv[1];
    for (int i = 2; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--smoke") {
        smoke = true;
      } else if (a.rfind("--", 0) == 0 && i + 1 < argc) {
        keys.push_back(a);
        values.push_back(argv[++i]);
      } else {
        std::fprintf(stderr, "ignoring argument '%s'\n", a.c_str());
      }
    }
  }
  std::string get(const std::string& key, const std::string& fallback = "") const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return values[i];
    }
    return fallback;
  }
  uint64_t size(const std::string& key, uint64_t fallback) const {
    const std::string v = get(key);
    return v.empty() ? fallback : std::strtoull(v.c_str(), nullptr, 10);
  }
  // --sizes A,B,... (bytes); default 4 KiB to 256 MiB by powers of 4
  // (smoke: 4 KiB to 1 MiB).
  std::vector<size_t> sizes() const {
    std::vector<size_t> out;
    const std::string v = get("--sizes");
    if (!v.empty()) {
      size_t start = 0;
      while (start < v.size()) {
        size_t end = v.find(',', start);
        if (end == std::string::npos) end = v.size();
        const size_t n = std::strtoull(v.substr(start, end - start).c_str(), nullptr, 10);
        if (n > 0) out.push_back(n);
        start = end + 1;
      }
    }
    if (out.empty()) {
      const size_t top = smoke ? (size_t{1} << 20) : (size_t{256} << 20);
      for (size_t n = 4096; n <= top; n *= 4) out.push_back(n);
    }
    return out;
  }
  // Prints the result (and appends it to --json FILE); returns 0.
  int emit(const Json& j) const {
    const std::string text = j.str() + "\n";
    std::fputs(text.c_str(), stdout);
    const std::string path = get("--json");
    if (!path.empty()) {
      FILE* f = std::fopen(path.c_str(), "a");
      if (f == nullptr) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
    return 0;
  }

  std::string mode;
  bool smoke = false;
  std::vector<std::string> keys, values;
};

}  // namespace rgpu::bench
