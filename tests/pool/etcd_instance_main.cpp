// A pool instance on etcd as its own process, for the test that kills one
// mid-run (etcd_kill_test.cpp). It registers a server of its own (a CPU
// device its requests never use) and heartbeats it, then places and
// releases whole NVIDIA devices until killed, printing one line per event:
//   ready <first lease id>
//   grant <lease id>       after the grant is durable in etcd
//   releasing <lease id>   before the release is written
// Usage: rgpu_pool_etcd_instance ENDPOINT PREFIX NAME SERVER_ID
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "rgpu/pool/etcd_store.h"

using namespace rgpu::pool;
using rgpu::Result;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s ENDPOINT PREFIX NAME SERVER_ID\n", argv[0]);
    return 2;
  }
  PoolConfig config;
  config.heartbeat_interval_ms = 500;
  config.heartbeat_timeout_ms = 2000;
  config.queue_timeout_ms = 200;
  SystemClock clock;
  EtcdStoreOptions options;
  options.prefix = argv[2];
  options.instance = argv[3];
  Result<std::unique_ptr<EtcdStore>> opened = EtcdStore::open(config, clock, {{argv[1]}, 2000}, options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  EtcdStore& store = *opened.value();
  ServerInfo own;
  own.id = argv[4];
  own.address = own.id + ":7000";
  own.devices.push_back(Device{0, "cpu", 0, 1ull << 30, {}});
  if (!store.register_server(own).is_ok()) return 1;
  std::printf("ready %llu\n", static_cast<unsigned long long>(store.first_lease_id()));
  std::fflush(stdout);

  std::mt19937 rng(7);
  std::vector<LeaseId> mine;
  auto take = [&](const Changes& ch) {
    for (const Grant& g : ch.granted) {
      mine.push_back(g.lease.id);
      std::printf("grant %llu\n", static_cast<unsigned long long>(g.lease.id));
    }
    for (const EndedLease& e : ch.ended) std::erase(mine, e.lease.id);
    std::fflush(stdout);
  };
  auto last_beat = std::chrono::steady_clock::now();
  for (;;) {
    Request r;
    r.devices = 1;
    r.tenant = options.instance;
    Result<Submitted> s = store.submit(r);
    if (s.is_ok()) take(s.value().changes);
    take(store.tick());
    if (!mine.empty() && rng() % 2 == 0) {
      const LeaseId id = mine[rng() % mine.size()];
      std::erase(mine, id);
      std::printf("releasing %llu\n", static_cast<unsigned long long>(id));
      std::fflush(stdout);
      Result<Changes> rel = store.release(id);
      if (rel.is_ok()) take(rel.value());
    }
    if (std::chrono::steady_clock::now() - last_beat > std::chrono::milliseconds(300)) {
      (void)store.heartbeat(own.id, {});
      last_beat = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
