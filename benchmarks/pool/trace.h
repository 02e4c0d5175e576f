// The simulated pool and its job trace: servers of three kinds, and three
// teams whose work follows the day (inference bursts by day, training by
// night, simulation in intermittent bursts). Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rgpu/pool/model.h"

namespace rgpu::pool::sim {

constexpr pool::Millis kMinute = 60'000;
constexpr pool::Millis kHour = 60 * kMinute;

struct Job {
  pool::Millis arrival = 0;
  pool::Millis duration = 0;
  int team = 0;  // index into teams()
  pool::Request request;
};

struct Team {
  const char* name;
  double weight;  // fair-share weight, and its part in the static split
};
const std::vector<Team>& teams();

// `n` servers: 60% with 8 H100 (80 GiB, shared by up to 4 sessions),
// 30% with 8 A100 (40 GiB, up to 2 sessions), 10% with 4 CPU devices.
std::vector<pool::ServerInfo> make_servers(int n);

// `n` jobs arriving over `hours` (60% inference, 15% training, 25%
// simulation), sorted by arrival.
std::vector<Job> make_jobs(int n, int hours, int servers, uint64_t seed);

}  // namespace rgpu::pool::sim
