// rgpu-pool-sim: drives the real scheduler (rgpu_pool_core) with simulated
// servers and a day/night job trace, on simulated time, and measures what
// operators and the scheduler's authors want to know: placements per
// second and per-call latency (wall time of the real calls), GPU
// utilization and queue waits (simulated time), against a static split of
// the same GPUs between the teams. Writes one JSON file; plot.py draws it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rgpu/pool/scheduler.h"
#include "trace.h"

namespace rgpu::pool::sim {
namespace {

constexpr Millis kBin = 30 * kMinute;
constexpr Millis kTickEvery = kMinute;
constexpr Millis kHeartbeatEvery = 5 * kMinute;

struct Options {
  int servers = 1000;
  int jobs = 100000;
  int hours = 72;
  uint64_t seed = 1;
  int sweep_requests = 10000;
  std::string out = "pool-sim.json";
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Device-equivalents held over time, in bins of kBin.
class Integrator {
 public:
  void add(Millis t, double delta) {
    advance(t);
    level_ += delta;
  }
  void advance(Millis t) {
    while (last_ < t) {
      const size_t bin = static_cast<size_t>(last_ / kBin);
      const Millis edge = static_cast<Millis>(bin + 1) * kBin;
      const Millis to = std::min(t, edge);
      if (bins_.size() <= bin) bins_.resize(bin + 1, 0.0);
      bins_[bin] += level_ * static_cast<double>(to - last_);
      last_ = to;
    }
  }
  // Device-ms per bin.
  const std::vector<double>& bins() const { return bins_; }

 private:
  double level_ = 0;
  Millis last_ = 0;
  std::vector<double> bins_;
};

struct Run {
  std::string name;
  size_t placements = 0;
  size_t jobs = 0;
  std::vector<double> submit_us, release_us, tick_us, heartbeat_us;
  double scheduler_s = 0;  // wall time inside scheduler calls
  double placing_s = 0;    // of which in submit and release, the calls that place
  std::vector<double> wait_s;
  std::vector<std::vector<double>> team_wait_s = std::vector<std::vector<double>>(3);
  Integrator gpu, cpu;
  std::vector<Integrator> team = std::vector<Integrator>(3);
  // Device-ms held per bin, filled from the integrators when a run ends
  // (summed over the teams' pools for the static split).
  std::vector<double> gpu_bins, cpu_bins;
  std::vector<std::vector<double>> team_bins = std::vector<std::vector<double>>(3);
  double gpus = 0, cpus = 0;
  Millis makespan = 0;
  std::vector<size_t> gave_up = std::vector<size_t>(3);  // jobs whose wait timed out
  std::vector<size_t> submitted = std::vector<size_t>(3);
};

void add_bins(std::vector<double>* into, const std::vector<double>& from) {
  if (into->size() < from.size()) into->resize(from.size(), 0.0);
  for (size_t i = 0; i < from.size(); ++i) (*into)[i] += from[i];
}

// One simulated pool: `servers` and the jobs of `jobs`, under `config`.
void simulate(const std::vector<ServerInfo>& servers, const std::vector<const Job*>& jobs, const PoolConfig& config,
              Run* run) {
  ManualClock clock(0);
  Scheduler sched(config, clock);
  using Clock = std::chrono::steady_clock;
  auto timed = [&](std::vector<double>* into, auto&& call) {
    const auto t0 = Clock::now();
    auto r = call();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    into->push_back(us);
    run->scheduler_s += us / 1e6;
    if (into == &run->submit_us || into == &run->release_us) run->placing_s += us / 1e6;
    return r;
  };

  std::unordered_map<std::string, size_t> server_of;
  for (size_t i = 0; i < servers.size(); ++i) {
    server_of[servers[i].id] = i;
    for (const Device& d : servers[i].devices) (d.is_cpu() ? run->cpus : run->gpus) += 1;
    if (!sched.register_server(servers[i]).is_ok()) std::abort();
  }
  // What each device holds, for heartbeats: units and memory.
  std::vector<std::vector<std::pair<double, uint64_t>>> held(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) held[i].resize(servers[i].devices.size());

  struct Live {
    const Job* job;
    std::vector<std::tuple<size_t, uint32_t, double, uint64_t, bool>> parts;  // server, device, units, memory, cpu
  };
  std::unordered_map<LeaseId, Live> live;
  std::unordered_map<TicketId, const Job*> waiting;

  // Events: (time, order, id). Order at one instant: ends free capacity
  // before arrivals ask for it; ticks and heartbeats last.
  enum : int { kEnd = 0, kArrive = 1, kTick = 2, kBeat = 3 };
  using Event = std::tuple<Millis, int, uint64_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (size_t i = 0; i < jobs.size(); ++i) events.push({jobs[i]->arrival, kArrive, i});
  events.push({kTickEvery, kTick, 0});
  events.push({kHeartbeatEvery, kBeat, 0});

  size_t done = 0;
  auto grant = [&](const Grant& g, const Job* job) {
    run->placements += 1;
    run->wait_s.push_back(static_cast<double>(g.waited_ms) / 1000.0);
    run->team_wait_s[static_cast<size_t>(job->team)].push_back(static_cast<double>(g.waited_ms) / 1000.0);
    Live l{job, {}};
    double total = 0;
    for (const PlacedDevice& pd : g.lease.placement) {
      const size_t si = server_of.at(pd.server_id);
      const Device& dev = servers[si].devices[pd.device];
      const double units = std::min(
          1.0, std::max(pd.share, static_cast<double>(pd.memory_bytes) / static_cast<double>(dev.memory_bytes)));
      // A device is at most fully busy, whatever its leases add up to.
      const double before = std::min(1.0, held[si][pd.device].first);
      held[si][pd.device].first += units;
      (dev.is_cpu() ? run->cpu : run->gpu).add(clock.now(), std::min(1.0, held[si][pd.device].first) - before);
      held[si][pd.device].second += pd.memory_bytes;
      l.parts.emplace_back(si, pd.device, units, pd.memory_bytes, dev.is_cpu());
      total += units;
    }
    run->team[static_cast<size_t>(job->team)].add(clock.now(), total);
    live.emplace(g.lease.id, std::move(l));
    events.push({clock.now() + job->duration, kEnd, g.lease.id});
  };
  auto apply = [&](const Changes& ch) {
    for (const Grant& g : ch.granted) {
      auto it = waiting.find(g.ticket);
      grant(g, it->second);
      waiting.erase(it);
    }
    for (TicketId t : ch.timed_out) {
      auto it = waiting.find(t);
      run->gave_up[static_cast<size_t>(it->second->team)] += 1;
      waiting.erase(it);
      done += 1;
    }
    if (!ch.ended.empty()) {
      std::fprintf(stderr, "pool-sim: the pool ended a lease; nothing here should\n");
      std::abort();
    }
  };

  while (!events.empty()) {
    auto [t, kind, id] = events.top();
    events.pop();
    clock.set(t);
    switch (kind) {
      case kArrive: {
        const Job* job = jobs[id];
        run->submitted[static_cast<size_t>(job->team)] += 1;
        auto sub = timed(&run->submit_us, [&] { return sched.submit(job->request); });
        if (!sub.is_ok()) std::abort();
        waiting[sub.value().ticket] = job;
        apply(sub.value().changes);
        break;
      }
      case kEnd: {
        auto it = live.find(id);
        double total = 0;
        for (const auto& [si, dev, units, mem, cpu] : it->second.parts) {
          const double before = std::min(1.0, held[si][dev].first);
          held[si][dev].first -= units;
          (cpu ? run->cpu : run->gpu).add(t, std::min(1.0, held[si][dev].first) - before);
          held[si][dev].second -= mem;
          total += units;
        }
        run->team[static_cast<size_t>(it->second.job->team)].add(t, -total);
        live.erase(it);
        done += 1;
        run->makespan = t;
        auto rel = timed(&run->release_us, [&] { return sched.release(id); });
        if (!rel.is_ok()) std::abort();
        apply(rel.value());
        break;
      }
      case kTick: {
        apply(timed(&run->tick_us, [&] { return sched.tick(); }));
        if (done < jobs.size()) events.push({t + kTickEvery, kTick, 0});
        break;
      }
      case kBeat: {
        for (size_t si = 0; si < servers.size(); ++si) {
          std::vector<DeviceUse> use;
          for (uint32_t d = 0; d < held[si].size(); ++d) {
            use.push_back({d, held[si][d].second, std::min(1.0, held[si][d].first)});
          }
          auto hb = timed(&run->heartbeat_us, [&] { return sched.heartbeat(servers[si].id, use); });
          if (!hb.is_ok()) std::abort();
        }
        if (done < jobs.size()) events.push({t + kHeartbeatEvery, kBeat, 0});
        break;
      }
    }
  }
  run->jobs += jobs.size();
  run->gpu.advance(run->makespan);
  run->cpu.advance(run->makespan);
  add_bins(&run->gpu_bins, run->gpu.bins());
  add_bins(&run->cpu_bins, run->cpu.bins());
  for (size_t i = 0; i < 3; ++i) {
    run->team[i].advance(run->makespan);
    add_bins(&run->team_bins[i], run->team[i].bins());
  }
}

PoolConfig sim_config(Policy policy) {
  PoolConfig c;
  c.policy = policy;
  c.queue_timeout_ms = 0;  // jobs wait as long as it takes
  c.lease_ttl_ms = 1000 * kHour;
  c.heartbeat_interval_ms = kHeartbeatEvery;
  c.heartbeat_timeout_ms = 3 * kHeartbeatEvery;
  for (const Team& t : teams()) c.tenant_weights[t.name] = t.weight;
  return c;
}

// Each team gets its own servers, in proportion to its weight, from each
// kind of server alike; it runs its own jobs on them and nothing else.
void simulate_static(const std::vector<ServerInfo>& servers, const std::vector<Job>& jobs, Run* run) {
  double total_weight = 0;
  for (const Team& t : teams()) total_weight += t.weight;
  std::vector<std::vector<ServerInfo>> part(teams().size());
  std::map<std::string, std::vector<const ServerInfo*>> by_kind;
  for (const ServerInfo& s : servers) by_kind[s.devices[0].kind].push_back(&s);
  for (const auto& [kind, group] : by_kind) {
    double acc = 0;
    size_t next = 0;
    for (size_t team = 0; team < teams().size(); ++team) {
      acc += teams()[team].weight / total_weight;
      const size_t upto = team + 1 == teams().size() ? group.size()
                                                      : static_cast<size_t>(std::lround(acc * static_cast<double>(group.size())));
      for (; next < upto; ++next) part[team].push_back(*group[next]);
    }
  }
  for (size_t team = 0; team < teams().size(); ++team) {
    std::vector<const Job*> mine;
    for (const Job& j : jobs) {
      if (static_cast<size_t>(j.team) == team) mine.push_back(&j);
    }
    Run r;
    simulate(part[team], mine, sim_config(Policy::kBinpack), &r);
    // Merge into one run over all the GPUs.
    run->placements += r.placements;
    run->jobs += r.jobs;
    run->scheduler_s += r.scheduler_s;
    run->placing_s += r.placing_s;
    run->submit_us.insert(run->submit_us.end(), r.submit_us.begin(), r.submit_us.end());
    run->release_us.insert(run->release_us.end(), r.release_us.begin(), r.release_us.end());
    run->tick_us.insert(run->tick_us.end(), r.tick_us.begin(), r.tick_us.end());
    run->heartbeat_us.insert(run->heartbeat_us.end(), r.heartbeat_us.begin(), r.heartbeat_us.end());
    run->wait_s.insert(run->wait_s.end(), r.wait_s.begin(), r.wait_s.end());
    run->team_wait_s[team] = r.team_wait_s[team];
    run->gave_up[team] = r.gave_up[team];
    run->submitted[team] = r.submitted[team];
    run->gpus += r.gpus;
    run->cpus += r.cpus;
    run->makespan = std::max(run->makespan, r.makespan);
    add_bins(&run->gpu_bins, r.gpu_bins);
    add_bins(&run->cpu_bins, r.cpu_bins);
    add_bins(&run->team_bins[team], r.team_bins[team]);
  }
}

// Placement latency against how full the pool is: the pool filled to
// `fill` of its GPUs with one-device leases (spread over the servers, the
// hard case for an index: every server has a little room), then timed
// submit + release of a one-device and an eight-device request.
struct SweepPoint {
  double fill;
  std::vector<double> one_us, eight_us;
};

std::vector<SweepPoint> sweep(const std::vector<ServerInfo>& servers, int requests) {
  std::vector<SweepPoint> out;
  for (double fill : {0.0, 0.5, 0.9, 0.99}) {
    for (Policy policy : {Policy::kSpread}) {
      ManualClock clock(0);
      PoolConfig c = sim_config(policy);
      c.heartbeat_timeout_ms = 1000 * kHour;
      Scheduler sched(c, clock);
      size_t gpus = 0;
      for (const ServerInfo& s : servers) {
        (void)sched.register_server(s);
        for (const Device& d : s.devices) gpus += d.is_cpu() ? 0 : 1;
      }
      Request one;
      one.tenant = "fill";
      const size_t target = static_cast<size_t>(fill * static_cast<double>(gpus));
      for (size_t i = 0; i < target; ++i) (void)sched.submit(one);
      SweepPoint p{fill, {}, {}};
      Request eight;
      eight.devices = 8;
      eight.tenant = "probe";
      using Clock = std::chrono::steady_clock;
      for (int i = 0; i < requests; ++i) {
        for (auto [req, into] : {std::pair{&one, &p.one_us}, std::pair{&eight, &p.eight_us}}) {
          const auto t0 = Clock::now();
          auto sub = sched.submit(*req);
          into->push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          if (!sub.value().changes.granted.empty()) {
            (void)sched.release(sub.value().changes.granted[0].lease.id);
          } else {
            (void)sched.cancel(sub.value().ticket);
          }
        }
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

// "2 CPUs (AMD EPYC ...), load average 1.5 at the start", for the report:
// latencies depend on both.
std::string machine() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  for (char& c : model) {
    if (c == '"' || c == '\\') c = ' ';
  }
  std::ifstream la("/proc/loadavg");
  std::string load;
  la >> load;
  return std::to_string(std::thread::hardware_concurrency()) + " CPUs (" + model + "), load average " +
         (load.empty() ? "unknown" : load) + " at the start";
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string array(const std::vector<double>& v, double scale) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + num(v[i] * scale);
  return s + "]";
}

std::string stats(const std::vector<double>& v) {
  return "{\"p50\": " + num(percentile(v, 0.5)) + ", \"p99\": " + num(percentile(v, 0.99)) +
         ", \"mean\": " + num(mean(v)) + ", \"n\": " + std::to_string(v.size()) + "}";
}

std::string run_json(const Run& r, int hours) {
  // Utilization over the trace's hours (the tail after the last arrival,
  // while queues drain, is left out: both sides have it, unequally).
  const size_t bins = static_cast<size_t>(hours) * kHour / kBin;
  auto util = [&](const std::vector<double>& b, double devices) {
    double busy = 0;
    for (size_t i = 0; i < bins && i < b.size(); ++i) busy += b[i];
    return devices > 0 ? busy / (devices * static_cast<double>(hours) * kHour) : 0.0;
  };
  std::vector<double> all_calls = r.submit_us;
  all_calls.insert(all_calls.end(), r.release_us.begin(), r.release_us.end());
  std::ostringstream o;
  o << "{\"name\": \"" << r.name << "\", \"jobs\": " << r.jobs << ", \"placements\": " << r.placements
    << ", \"scheduler_s\": " << num(r.scheduler_s)
    << ", \"placing_s\": " << num(r.placing_s)
    << ", \"placements_per_s\": " << num(r.placing_s > 0 ? static_cast<double>(r.placements) / r.placing_s : 0)
    << ",\n   \"submit_us\": " << stats(r.submit_us) << ", \"release_us\": " << stats(r.release_us)
    << ",\n   \"tick_us\": " << stats(r.tick_us) << ", \"heartbeat_us\": " << stats(r.heartbeat_us)
    << ",\n   \"gpu_utilization\": " << num(util(r.gpu_bins, r.gpus))
    << ", \"cpu_device_utilization\": " << num(util(r.cpu_bins, r.cpus))
    << ", \"makespan_h\": " << num(static_cast<double>(r.makespan) / kHour) << ",\n   \"wait_s\": " << stats(r.wait_s)
    << ",\n   \"team_wait_s\": {";
  for (size_t t = 0; t < 3; ++t) o << (t ? ", " : "") << "\"" << teams()[t].name << "\": " << stats(r.team_wait_s[t]);
  o << "},\n   \"team_gave_up\": {";
  for (size_t t = 0; t < 3; ++t) o << (t ? ", " : "") << "\"" << teams()[t].name << "\": " << r.gave_up[t];
  o << "}, \"team_submitted\": {";
  for (size_t t = 0; t < 3; ++t) o << (t ? ", " : "") << "\"" << teams()[t].name << "\": " << r.submitted[t];
  o << "},\n   \"gpu_utilization_by_bin\": " << array(r.gpu_bins, 1.0 / (r.gpus * kBin));
  o << ",\n   \"team_devices_by_bin\": {";
  for (size_t t = 0; t < 3; ++t) {
    o << (t ? ", " : "") << "\"" << teams()[t].name << "\": " << array(r.team_bins[t], 1.0 / kBin);
  }
  // The wait distribution, as percentiles, for a CDF.
  o << "},\n   \"wait_s_percentiles\": [";
  for (int p = 0; p <= 100; ++p) o << (p ? "," : "") << num(percentile(r.wait_s, p / 100.0));
  o << "]}";
  return o.str();
}

int main_impl(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rgpu-pool-sim: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--servers") opt.servers = std::atoi(next());
    else if (a == "--jobs") opt.jobs = std::atoi(next());
    else if (a == "--hours") opt.hours = std::atoi(next());
    else if (a == "--seed") opt.seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--sweep-requests") opt.sweep_requests = std::atoi(next());
    else if (a == "--out") opt.out = next();
    else {
      std::fprintf(stderr,
                   "usage: rgpu-pool-sim [--servers N] [--jobs N] [--hours H] [--seed S] [--sweep-requests N] "
                   "[--out FILE.json]\n");
      return 2;
    }
  }
  if (opt.servers < 10 || opt.jobs < 100 || opt.hours < 1) {
    std::fprintf(stderr, "rgpu-pool-sim: at least 10 servers, 100 jobs and 1 hour\n");
    return 2;
  }
  const std::vector<ServerInfo> servers = make_servers(opt.servers);
  const std::vector<Job> jobs = make_jobs(opt.jobs, opt.hours, opt.servers, opt.seed);
  std::vector<const Job*> all;
  for (const Job& j : jobs) all.push_back(&j);

  std::vector<Run> runs;
  for (Policy p : {Policy::kBinpack, Policy::kSpread, Policy::kLeastLoaded}) {
    Run r;
    r.name = std::string("pool, ") + policy_name(p);
    simulate(servers, all, sim_config(p), &r);
    std::fprintf(stderr, "%s: %.0f placements/s, wait p50 %.0f s p99 %.0f s, %zu gave up\n", r.name.c_str(),
                 static_cast<double>(r.placements) / r.placing_s, percentile(r.wait_s, 0.5),
                 percentile(r.wait_s, 0.99), r.gave_up[0] + r.gave_up[1] + r.gave_up[2]);
    runs.push_back(std::move(r));
  }
  Run st;
  st.name = "static per-team";
  simulate_static(servers, jobs, &st);
  std::fprintf(stderr, "%s: wait p50 %.0f s p99 %.0f s, %zu gave up\n", st.name.c_str(), percentile(st.wait_s, 0.5),
               percentile(st.wait_s, 0.99), st.gave_up[0] + st.gave_up[1] + st.gave_up[2]);
  runs.push_back(std::move(st));
  const std::vector<SweepPoint> points = sweep(servers, opt.sweep_requests);

  size_t gpus = 0, cpus = 0;
  for (const ServerInfo& s : servers) {
    for (const Device& d : s.devices) (d.is_cpu() ? cpus : gpus) += 1;
  }
  std::ofstream f(opt.out);
  f << "{\"servers\": " << opt.servers << ", \"gpus\": " << gpus << ", \"cpu_devices\": " << cpus
    << ", \"jobs\": " << opt.jobs << ", \"hours\": " << opt.hours << ", \"seed\": " << opt.seed
    << ", \"bin_minutes\": " << kBin / kMinute << ", \"machine\": \"" << machine() << "\",\n \"teams\": [";
  for (size_t t = 0; t < teams().size(); ++t) {
    f << (t ? ", " : "") << "{\"name\": \"" << teams()[t].name << "\", \"weight\": " << num(teams()[t].weight) << "}";
  }
  f << "],\n \"runs\": [\n  ";
  for (size_t i = 0; i < runs.size(); ++i) f << (i ? ",\n  " : "") << run_json(runs[i], opt.hours);
  f << "],\n \"sweep\": [";
  for (size_t i = 0; i < points.size(); ++i) {
    f << (i ? ",\n  " : "\n  ") << "{\"fill\": " << num(points[i].fill) << ", \"one_device_us\": " << stats(points[i].one_us)
      << ", \"eight_devices_us\": " << stats(points[i].eight_us) << "}";
  }
  f << "]}\n";
  if (!f) {
    std::fprintf(stderr, "rgpu-pool-sim: cannot write %s\n", opt.out.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s\n", opt.out.c_str());
  return 0;
}

}  // namespace
}  // namespace rgpu::pool::sim

int main(int argc, char** argv) { return rgpu::pool::sim::main_impl(argc, argv); }
