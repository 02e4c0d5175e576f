// The simulated pool and its job trace (see trace.h).
#include "trace.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace rgpu::pool::sim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// Each team's average demand, as a part of the pool's GPU capacity over the
// whole trace: 85% in all, more than the pool holds at night's peak and far
// more than one team's static share at its own peak.
constexpr double kDemand[] = {0.20, 0.50, 0.15};
// How long a job of each team waits before its user gives up: an answer to
// an inference request is useless after minutes; a training run can start
// in the morning; a simulation in a few hours.
constexpr Millis kPatience[] = {15 * kMinute, 8 * kHour, 4 * kHour};

double hour_of_day(double t_ms) { return std::fmod(t_ms / kHour, 24.0); }

}  // namespace

const std::vector<Team>& teams() {
  static const std::vector<Team> t = {{"inference", 2.0}, {"training", 2.0}, {"simulation", 1.0}};
  return t;
}

std::vector<ServerInfo> make_servers(int n) {
  std::vector<ServerInfo> out;
  for (int i = 0; i < n; ++i) {
    ServerInfo s;
    s.id = "srv" + std::to_string(i);
    s.address = "10." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ".1:7000";
    const int kind = i % 10;  // 0-5 H100, 6-8 A100, 9 CPU
    const uint32_t devices = kind == 9 ? 4 : 8;
    for (uint32_t d = 0; d < devices; ++d) {
      Device dev;
      if (kind <= 5) {
        dev = Device{d, "NVIDIA H100 80GB HBM3", 90, 80 * kGiB, {Slice{0, 80 * kGiB, 1.0, 4}}};
      } else if (kind <= 8) {
        dev = Device{d, "NVIDIA A100-SXM4-40GB", 80, 40 * kGiB, {Slice{0, 40 * kGiB, 1.0, 2}}};
      } else {
        dev = Device{d, "cpu", 80, 32 * kGiB, {Slice{0, 32 * kGiB, 1.0, 4}}};
      }
      s.devices.push_back(dev);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Job> make_jobs(int n, int hours, int servers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double horizon = static_cast<double>(hours) * kHour;
  int gpus = 0;
  for (const ServerInfo& s : make_servers(servers)) {
    for (const Device& d : s.devices) gpus += d.is_cpu() ? 0 : 1;
  }
  const double capacity_ms = static_cast<double>(gpus) * horizon;  // device-ms

  // Inference bursts: two 45-minute windows each working day.
  std::vector<double> bursts;
  for (int day = 0; day * 24 < hours; ++day) {
    for (int b = 0; b < 2; ++b) bursts.push_back((day * 24 + 9 + 10 * uni(rng)) * kHour);
  }
  auto inference_rate = [&](double t) {
    const double h = hour_of_day(t);
    double r = (h >= 8 && h < 20) ? 1.0 : 0.15;
    for (double b : bursts) {
      if (t >= b && t < b + 45 * kMinute) r *= 4.0;
    }
    return r;
  };
  auto training_rate = [&](double t) {
    const double h = hour_of_day(t);
    return (h >= 19 || h < 7) ? 1.0 : 0.1;
  };
  std::vector<double> sim_bursts;
  for (int i = 0; i < std::max(3, hours / 6); ++i) sim_bursts.push_back(uni(rng) * horizon);

  const int counts[] = {n * 60 / 100, n * 15 / 100, n - n * 60 / 100 - n * 15 / 100};
  // Device-equivalents one job of each team holds on average (see below).
  const double units[] = {0.5, 2.9, 1.0};
  std::vector<Job> jobs;
  jobs.reserve(static_cast<size_t>(n));
  for (int team = 0; team < 3; ++team) {
    const double mean_ms = kDemand[team] * capacity_ms / (counts[team] * units[team]);
    for (int i = 0; i < counts[team]; ++i) {
      Job j;
      j.team = team;
      Request& r = j.request;
      r.tenant = teams()[static_cast<size_t>(team)].name;
      double t = 0;
      if (team == 2) {
        const double c = sim_bursts[static_cast<size_t>(uni(rng) * static_cast<double>(sim_bursts.size()))];
        t = std::fmod(c + std::exponential_distribution<double>(1.0 / (15 * kMinute))(rng), horizon);
      } else {
        const double peak = team == 0 ? 4.0 : 1.0;
        do {
          t = uni(rng) * horizon;
        } while (uni(rng) * peak > (team == 0 ? inference_rate(t) : training_rate(t)));
      }
      j.arrival = static_cast<Millis>(t);
      double d = 0;
      switch (team) {
        case 0:  // inference: one device, a quarter-ish of it, short
          r.devices = 1;
          r.memory_bytes = 24 * kGiB;
          r.share = 0.5;
          r.priority = kPriorityHigh;
          d = std::exponential_distribution<double>(1.0 / mean_ms)(rng);
          break;
        case 1: {  // training: whole devices, 1-8, long-tailed, some need Hopper
          const double u = uni(rng);
          r.devices = u < 0.40 ? 1 : u < 0.65 ? 2 : u < 0.85 ? 4 : 8;
          r.memory_bytes = 0;
          r.min_compute_capability = uni(rng) < 0.3 ? 90 : 80;
          r.priority = kPriorityNormal;
          const double sigma = 1.0;
          const double mu = std::log(mean_ms) - sigma * sigma / 2;
          d = std::min(std::lognormal_distribution<double>(mu, sigma)(rng), 36.0 * kHour);
          break;
        }
        default:  // simulation: two half devices, any kind, CPU devices too
          r.devices = 2;
          r.memory_bytes = 16 * kGiB;
          r.share = 0.5;
          r.kind = KindWanted::kAny;
          r.priority = kPriorityLow;
          d = std::exponential_distribution<double>(1.0 / mean_ms)(rng);
          break;
      }
      j.duration = std::max<Millis>(kMinute, static_cast<Millis>(d));
      r.timeout_ms = kPatience[team];
      jobs.push_back(std::move(j));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.arrival < b.arrival; });
  return jobs;
}

}  // namespace rgpu::pool::sim
