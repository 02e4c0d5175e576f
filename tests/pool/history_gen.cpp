// rgpu-pool-history-gen: writes the usage history of a simulated day of a
// small pool (history_trace.h), for the report's browser test and for
// trying `rgpu pool report` without a pool.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "history_trace.h"

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: rgpu-pool-history-gen OUT [--hours N] [--seed S]\n");
    return 2;
  }
  rgpu::pool::testing::TraceOptions trace;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--hours") == 0) {
      trace.hours = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--seed") == 0) {
      trace.seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "rgpu-pool-history-gen: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (trace.hours <= 0 || trace.hours > 24 * 31) {
    std::fprintf(stderr, "rgpu-pool-history-gen: --hours wants 1..744\n");
    return 2;
  }
  std::remove(argv[1]);
  std::remove((std::string(argv[1]) + ".1").c_str());
  rgpu::pool::HistoryOptions options;
  options.path = argv[1];
  options.fsync_interval_ms = 24 * 3'600'000;  // a generated file needs no durability
  options.sample_interval_ms = 60'000;
  options.heartbeat_interval_ms = 60'000;
  auto h = rgpu::pool::History::open(options, trace.start);
  if (!h.is_ok()) {
    std::fprintf(stderr, "rgpu-pool-history-gen: %s\n", h.status().message().c_str());
    return 1;
  }
  rgpu::pool::testing::run_day_trace(*h.value(), trace);
  return 0;
}
