// Parsing of the CPU device's environment variables.
#include "config.h"

#include "rgpu/common/request_text.h"

#include <cstdlib>

#include <algorithm>
#include <cctype>
#include <thread>

namespace rgpu::cpudev {

namespace {

Result<int> parse_count(const char* name, const std::string& text, int max) {
  if (text.empty() || text.size() > 9) return invalid_argument(std::string(name) + " must be a positive integer");
  int v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return invalid_argument(std::string(name) + " must be a positive integer");
    }
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > max) {
    return invalid_argument(std::string(name) + " must be between 1 and " + std::to_string(max));
  }
  return v;
}

// A size in parse_size's form (rgpu/common/request_text.h), named by
// `name` in the error; zero is refused.
Result<uint64_t> positive_size(const char* name, const char* text) {
  auto r = parse_size(text);
  if (!r) return Status(ErrorKind::kInvalidArgument, std::string(name) + ": " + r.status().message());
  if (*r == 0) return Status(ErrorKind::kInvalidArgument, std::string(name) + ": must be more than 0 bytes");
  return r;
}

}  // namespace


Result<Config> config_from_env(const char* (*getenv_fn)(const char*)) {
  Config c;
  unsigned hw = std::thread::hardware_concurrency();
  c.threads = hw ? static_cast<int>(hw) : 1;
  c.stream_workers = std::max(4, 2 * c.threads);
  if (const char* v = getenv_fn("RGPU_CPU_DEVICES"); v && *v) {
    auto r = parse_count("RGPU_CPU_DEVICES", v, 64);
    if (!r) return r.status();
    c.devices = *r;
  }
  if (const char* v = getenv_fn("RGPU_CPU_DEVICE_MEMORY"); v && *v) {
    auto r = positive_size("RGPU_CPU_DEVICE_MEMORY", v);
    if (!r) return r.status();
    c.memory_bytes = *r;
  }
  if (const char* v = getenv_fn("RGPU_CPU_THREADS"); v && *v) {
    auto r = parse_count("RGPU_CPU_THREADS", v, 1024);
    if (!r) return r.status();
    c.threads = *r;
  }
  if (const char* v = getenv_fn("RGPU_CPU_STREAM_WORKERS"); v && *v) {
    auto r = parse_count("RGPU_CPU_STREAM_WORKERS", v, 1024);
    if (!r) return r.status();
    c.stream_workers = *r;
  }
  if (const char* v = getenv_fn("RGPU_CPU_KERNEL_TIMEOUT_MS"); v && *v) {
    char* end = nullptr;
    unsigned long long ms = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0') {
      return Status(ErrorKind::kInvalidArgument, std::string("RGPU_CPU_KERNEL_TIMEOUT_MS: not a number: ") + v);
    }
    c.kernel_timeout_ms = ms;
  }
  if (const char* v = getenv_fn("RGPU_CPU_WORKER_NICE"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 0 || n > 19) {
      return Status(ErrorKind::kInvalidArgument, std::string("RGPU_CPU_WORKER_NICE: not a niceness from 0 to 19: ") + v);
    }
    c.worker_nice = static_cast<int>(n);
  }
  if (const char* v = getenv_fn("RGPU_CPU_PROGRAM_CACHE"); v && *v) {
    auto r = positive_size("RGPU_CPU_PROGRAM_CACHE", v);
    if (!r) return r.status();
    c.program_cache_bytes = *r;
  }
  return c;
}

}  // namespace rgpu::cpudev
