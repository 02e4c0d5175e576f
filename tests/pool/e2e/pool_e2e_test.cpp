// The pool end to end (docs/pool.md): rgpu-pool, rgpud servers on the CPU
// device and clients as separate processes, on loopback, every wait
// bounded. Placement through the service; the queue, its timeout and
// placement the moment capacity frees; a killed client's lease freed for the
// next; a lost server; leases rgpud must refuse; kind-aware placement in a
// pool with a test double that claims NVIDIA devices; a sample program run
// unchanged through RGPU_POOL; the usage report asked of a running pool;
// two pool instances sharing a real etcd, one of them killed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "../etcd_test_util.h"
#include "child.h"
#include "rgpu/common/metrics_text.h"
#include "rgpu/pool/client.h"
#include "rgpu/pool/lease_token.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/wire.h"

namespace rgpu::pool::testing {
namespace {

using rgpu::testing::Child;
using rgpu::testing::listening_address;
using rgpu::testing::SteadyClock;

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using poolwire::PoolMessage;

constexpr const char* kKey = "pool-test-key-0123456789abcdef";
const std::string kBin = RGPU_BIN_DIR;
// Where a program linked against libcuda.so.1 finds rgpu's client library.
const std::string kLibraryPath = std::string("LD_LIBRARY_PATH=") + RGPU_LIB_DIR + "/rgpu";

// A server that is not rgpud: registers what it is told and heartbeats
// until told to stop, so tests can claim NVIDIA devices or lose a server.
class FakeServer {
 public:
  FakeServer(const std::string& pool, ServerInfo info) : info_(std::move(info)) {
    auto ch = net::Channel::connect({pool}, 2s);
    if (!ch.is_ok()) return;
    channel_ = std::move(ch.value());
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initRegister();
    wire::write(r, info_);
    r.setBootId(42);
    wire::sign(r, kKey,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count());
    (void)channel_->send(b);
    thread_ = std::thread([this] {
      while (!stop_) {
        if (beating_) {
          capnp::MallocMessageBuilder hb;
          hb.initRoot<PoolMessage>().initHeartbeat().setSessions(0);
          (void)channel_->send(hb);
        }
        auto m = channel_->receive(200ms);
        if (m.is_ok() && m.value() && m.value()->root().which() == PoolMessage::END_SESSION) ++end_orders_;
      }
    });
  }
  ~FakeServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool connected() const { return channel_ != nullptr; }
  void stop_heartbeats() { beating_ = false; }
  int end_orders() const { return end_orders_; }

 private:
  ServerInfo info_;
  std::unique_ptr<net::Channel> channel_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> beating_{true};
  std::atomic<int> end_orders_{0};
};

ServerInfo nvidia_server(const std::string& id, uint32_t cc) {
  ServerInfo s;
  s.id = id;
  s.address = "127.0.0.1:9";  // nobody connects: the tests only look at placements
  s.devices.push_back(Device{0, "NVIDIA H100 80GB HBM3", cc, 80ull << 30, {}});
  return s;
}

class PoolE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rgpu-pool-e2e-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    key_file_ = (dir_ / "key").string();
    std::ofstream(key_file_) << kKey << "\n";
    chmod(key_file_.c_str(), 0600);
    std::ofstream(dir_ / "pool.toml") << "[scheduler]\nqueue_timeout_s = 60\npreemption = true\n"
                                      << "[heartbeat]\ninterval_s = 0.5\ntimeout_s = 2\n";
    std::vector<std::string> argv = {kBin + "/rgpu-pool", "--listen", "127.0.0.1:0", "--key-file", key_file_,
                                     "--config", (dir_ / "pool.toml").string()};
    for (const std::string& a : pool_extra()) argv.push_back(a);
    pool_ = Child::spawn(argv, {});
    pool_address_ = listening_address(*pool_);
    ASSERT_FALSE(pool_address_.empty()) << pool_->text;
  }
  // More arguments for rgpu-pool (dir_ exists when this is called).
  virtual std::vector<std::string> pool_extra() { return {}; }

  void TearDown() override {
    clients_.clear();
    servers_.clear();
    pool_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // rgpud on the CPU device in pool mode, `devices` devices of `memory` each.
  std::string start_rgpud(const std::string& id, int devices = 1, const std::string& memory = "1G",
                          std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kBin + "/rgpud",  "--listen",        "127.0.0.1:0", "--device",
                                     "cpu",            "--cpu-devices",   std::to_string(devices),
                                     "--pool",         pool_address_,     "--pool-key-file",
                                     key_file_,        "--pool-id",       id};
    argv.insert(argv.end(), extra.begin(), extra.end());
    servers_.push_back(Child::spawn(argv, {"UCX_TLS=tcp", "RGPU_CPU_DEVICE_MEMORY=" + memory}));
    const std::string address = listening_address(*servers_.back());
    EXPECT_FALSE(address.empty()) << servers_.back()->text;
    EXPECT_TRUE(wait_servers(servers_count_ + 1)) << servers_.back()->text;
    ++servers_count_;
    return address;
  }

  // Servers registered with the pool reach `n` within a bound.
  bool wait_servers(size_t n) {
    const auto deadline = SteadyClock::now() + 20s;
    while (SteadyClock::now() < deadline) {
      auto s = client::query_status(net::parse_addresses(pool_address_).value(), 2s);
      if (s.is_ok() && s.value().root().getStatus().getServers().size() == n) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  Child& client(std::vector<std::string> env, const std::string& program = kBin + "/pool_client") {
    env.push_back("RGPU_POOL=" + pool_address_);
    env.push_back("UCX_TLS=tcp");
    env.push_back(kLibraryPath);
    if (std::none_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("RGPU_POOL_KIND=", 0) == 0; })) {
      env.push_back("RGPU_POOL_KIND=cpu");
    }
    clients_.push_back(Child::spawn({program}, env));
    return *clients_.back();
  }

  client::AcquireOptions request(KindWanted kind, Millis timeout_ms = 0, uint32_t min_cc = 0) {
    client::AcquireOptions o;
    o.pool = {pool_address_};
    o.request.kind = kind;
    o.request.timeout_ms = timeout_ms;
    o.request.min_compute_capability = min_cc;
    o.program = "test";
    return o;
  }

  fs::path dir_;
  std::string key_file_;
  std::unique_ptr<Child> pool_;
  std::string pool_address_;
  std::vector<std::unique_ptr<Child>> servers_;
  size_t servers_count_ = 0;
  std::vector<std::unique_ptr<Child>> clients_;
};

TEST_F(PoolE2E, PlacesThroughTheServiceAndShowsStatus) {
  start_rgpud("cpu-a", 2);
  Child& c = client({"RGPU_REQUEST=devices=2,mem=256M"});
  ASSERT_TRUE(c.wait_for("ready count=2", 60s)) << c.text;
  auto status = Child::spawn({kBin + "/rgpu", "pool", "status", "--pool", pool_address_}, {});
  ASSERT_EQ(status->finish(20s), 0) << status->text;
  EXPECT_NE(status->text.find("cpu-a"), std::string::npos) << status->text;
  EXPECT_NE(status->text.find("leases: 1"), std::string::npos) << status->text;
  EXPECT_NE(status->text.find("pool_client"), std::string::npos) << status->text;
  EXPECT_EQ(c.finish(30s), 0) << c.text;
}

TEST_F(PoolE2E, QueuesTimesOutAndPlacesWhenCapacityFrees) {
  start_rgpud("cpu-a", 1, "1G");
  Child& a = client({"RGPU_REQUEST=mem=700M"});
  ASSERT_TRUE(a.wait_for("ready count=1", 60s)) << a.text;
  Child& b = client({"RGPU_REQUEST=mem=700M"});
  ASSERT_TRUE(b.wait_for("rgpu: waiting: 1 device of kind cpu, 700 MiB asked, 0 free of 1; position 1", 20s))
      << b.text;
  Child& late = client({"RGPU_REQUEST=mem=700M", "RGPU_POOL_TIMEOUT=1"});
  EXPECT_NE(late.finish(30s), 0);
  EXPECT_NE(late.text.find("timed out in the pool's queue"), std::string::npos) << late.text;
  EXPECT_EQ(b.text.find("ready"), std::string::npos) << b.text;
  EXPECT_EQ(a.finish(30s), 0) << a.text;  // its session ends: rgpud reports it, the pool places b
  EXPECT_TRUE(b.wait_for("ready count=1", 60s)) << b.text;
}

TEST_F(PoolE2E, RgpudReportsASessionsEndSoTheLeaseIsFreed) {
  start_rgpud("cpu-a", 1, "1G");
  // The test holds the lease's pool connection itself: only rgpud's report
  // of the session's end can free it.
  auto o = request(KindWanted::kCpu);
  o.request.memory_bytes = 700ull << 20;
  auto held = client::acquire(o);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  clients_.push_back(Child::spawn({kBin + "/pool_client"},
                                  {"RGPU_SERVER=" + client::server_list(held.value().placement),
                                   "RGPU_LEASE=" + held.value().token, "UCX_TLS=tcp", kLibraryPath}));
  Child& c = *clients_.back();
  ASSERT_TRUE(c.wait_for("ready count=1", 60s)) << c.text;
  std::atomic<bool> done{false};
  Result<client::Held> next = failed("not yet");
  std::thread waiter([&] {
    next = client::acquire(o);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(done);
  EXPECT_EQ(c.finish(30s), 0) << c.text;
  for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(50ms);
  waiter.join();
  EXPECT_TRUE(next.is_ok()) << next.status().to_string();
}

TEST_F(PoolE2E, KilledClientsLeaseGoesToTheNextWithinASecond) {
  start_rgpud("cpu-a", 1, "1G");
  Child& a = client({"RGPU_REQUEST=mem=700M"});
  ASSERT_TRUE(a.wait_for("ready count=1", 60s)) << a.text;
  Child& b = client({"RGPU_REQUEST=mem=700M", "RGPU_LOG_LEVEL=info"});
  ASSERT_TRUE(b.wait_for("rgpu: waiting: ", 20s)) << b.text;
  const auto killed = SteadyClock::now();
  a.kill_now();
  // The pool grants b its lease (b logs it) within the bound of 1 s;
  // b's own start (connect, context, allocation) is then bounded generously.
  ASSERT_TRUE(b.wait_for("pool lease=", 5s)) << b.text;
  const auto granted = SteadyClock::now() - killed;
  EXPECT_LT(granted, 1s) << "granted after " << std::chrono::duration<double>(granted).count() << " s";
  EXPECT_TRUE(b.wait_for("ready count=1", 60s)) << b.text;
}

TEST_F(PoolE2E, PreemptedSessionIsEndedWithAClearError) {
  start_rgpud("cpu-a", 1, "1G");
  Child& low = client({"RGPU_REQUEST=mem=700M", "RGPU_POOL_PRIORITY=low"});
  ASSERT_TRUE(low.wait_for("ready count=1", 60s)) << low.text;
  Child& high = client({"RGPU_REQUEST=mem=700M", "RGPU_POOL_PRIORITY=high"});
  EXPECT_TRUE(high.wait_for("ready count=1", 60s)) << high.text;
  EXPECT_TRUE(low.wait_for("preempted", 20s)) << low.text;
  EXPECT_NE(low.text.find("higher priority"), std::string::npos) << low.text;
}

TEST_F(PoolE2E, LostServerFailsItsLeasesAndWaitingRequestsMove) {
  auto lost = std::make_unique<FakeServer>(pool_address_, nvidia_server("gpu-lost", 90));
  ASSERT_TRUE(lost->connected());
  ASSERT_TRUE(wait_servers(1));
  auto held = client::acquire(request(KindWanted::kNvidia));
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  EXPECT_EQ(held.value().placement.at(0).server_id, "gpu-lost");
  // A second request waits for the only (whole, unsliced but leased) device...
  std::atomic<bool> done{false};
  Result<client::Held> second = failed("not yet");
  auto o = request(KindWanted::kNvidia, 30'000);
  o.request.memory_bytes = 80ull << 30;  // all of it: cannot share with the first
  std::thread waiter([&] {
    second = client::acquire(o);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(done);
  // ...the server goes silent: the pool drops it after the heartbeat
  // timeout, ending its lease; another server arrives and takes the waiting one.
  lost->stop_heartbeats();
  std::optional<std::string> why;
  for (int i = 0; i < 100 && !why; ++i) {
    std::this_thread::sleep_for(100ms);
    why = client::ended(held.value());
  }
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "server_lost");
  FakeServer other(pool_address_, nvidia_server("gpu-new", 90));
  for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(50ms);
  waiter.join();
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second.value().placement.at(0).server_id, "gpu-new");
}

TEST_F(PoolE2E, KindAwarePlacementInAMixedPool) {
  FakeServer gpu(pool_address_, nvidia_server("gpu-h100", 90));
  ASSERT_TRUE(wait_servers(1));
  ++servers_count_;  // so that start_rgpud waits for both: a request for a kind no server has is refused
  start_rgpud("cpu-a", 1);
  auto nv = client::acquire(request(KindWanted::kNvidia));
  ASSERT_TRUE(nv.is_ok()) << nv.status().to_string();
  EXPECT_EQ(nv.value().placement.at(0).server_id, "gpu-h100");
  auto cpu = client::acquire(request(KindWanted::kCpu));
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu.value().placement.at(0).server_id, "cpu-a");
  // No device of capability 10.0, held or not: refused at once, saying what
  // the pool has.
  auto newer = client::acquire(request(KindWanted::kNvidia, 30'000, 100));
  ASSERT_FALSE(newer.is_ok());
  EXPECT_NE(newer.status().message().find("no registered server could ever give this request: 1 device of kind "
                                          "nvidia, a whole slice, compute capability 10.0 or above asked"),
            std::string::npos)
      << newer.status().to_string();
  // And a real program asking for CPU devices lands on the CPU server,
  // once the whole-device lease above is given back.
  client::release(cpu.value());
  Child& d = client({"RGPU_POOL_KIND=cpu"});
  EXPECT_TRUE(d.wait_for("ready count=1", 60s)) << d.text;
}

// A lease signed here with the pool's key, for rgpud "cpu-a" device 0.
std::string token(LeaseId id, Millis issued, Millis expiry, const std::string& key = kKey,
                  const std::string& server = "cpu-a") {
  Lease l;
  l.id = id;
  l.tenant = "default";
  l.placement.push_back(PlacedDevice{server, "x", 0, 0, 64ull << 20, 0});
  l.issued = issued;
  l.expiry = expiry;
  l.nonce = random_lease_nonce().value();
  return sign_lease(l, key).value();
}

Millis wall_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(PoolE2E, RgpudRefusesForgedExpiredReplayedAndMissingLeases) {
  const std::string server = start_rgpud("cpu-a", 1);
  auto direct = [&](const std::string& lease) -> Child& {
    std::vector<std::string> env = {"RGPU_SERVER=" + server, "UCX_TLS=tcp", kLibraryPath};
    if (!lease.empty()) env.push_back("RGPU_LEASE=" + lease);
    clients_.push_back(Child::spawn({kBin + "/pool_client"}, env));
    return *clients_.back();
  };
  const Millis now = wall_now();
  const std::string good = token(1000, now, now + 60'000);
  Child& ok = direct(good);
  ASSERT_TRUE(ok.wait_for("ready count=1", 60s)) << ok.text;
  Child& replayed = direct(good);
  EXPECT_NE(replayed.finish(30s), 0);
  EXPECT_NE(replayed.text.find("already presented"), std::string::npos) << replayed.text;
  Child& forged = direct(token(1001, now, now + 60'000, "another-key-0123456789"));
  EXPECT_NE(forged.finish(30s), 0);
  EXPECT_NE(forged.text.find("lease refused"), std::string::npos) << forged.text;
  Child& expired = direct(token(1002, now - 120'000, now - 60'000));
  EXPECT_NE(expired.finish(30s), 0);
  EXPECT_NE(expired.text.find("expired"), std::string::npos) << expired.text;
  Child& elsewhere = direct(token(1003, now, now + 60'000, kKey, "cpu-b"));
  EXPECT_NE(elsewhere.finish(30s), 0);
  EXPECT_NE(elsewhere.text.find("no device on this server"), std::string::npos) << elsewhere.text;
  Child& foreign = [&]() -> Child& {
    clients_.push_back(Child::spawn({kBin + "/pool_client"},
                                    {"RGPU_SERVER=" + server, "UCX_TLS=tcp", kLibraryPath, "RGPU_TENANT=mallory",
                                     "RGPU_LEASE=" + token(1004, now, now + 60'000)}));
    return *clients_.back();
  }();
  EXPECT_NE(foreign.finish(30s), 0);
  EXPECT_NE(foreign.text.find("was granted to tenant default, not to mallory"), std::string::npos) << foreign.text;
  Child& none = direct("");
  EXPECT_NE(none.finish(30s), 0);
  EXPECT_NE(none.text.find("needs a lease"), std::string::npos) << none.text;
  EXPECT_EQ(ok.finish(30s), 0) << ok.text;
}

TEST_F(PoolE2E, AReleasedLeaseEndsItsSessionAndAdmitsNoOther) {
  const std::string server = start_rgpud("cpu-a", 1, "1G");
  auto direct = [&](const std::string& lease) -> Child& {
    clients_.push_back(Child::spawn({kBin + "/pool_client"},
                                    {"RGPU_SERVER=" + server, "UCX_TLS=tcp", kLibraryPath, "RGPU_LEASE=" + lease}));
    return *clients_.back();
  };
  auto o = request(KindWanted::kCpu);
  o.request.memory_bytes = 300ull << 20;
  auto used = client::acquire(o);
  ASSERT_TRUE(used.is_ok()) << used.status().to_string();
  Child& holder = direct(used.value().token);
  ASSERT_TRUE(holder.wait_for("ready count=1", 60s)) << holder.text;
  // A second lease whose token is never presented while it is held.
  auto spare = client::acquire(o);
  ASSERT_TRUE(spare.is_ok()) << spare.status().to_string();
  const std::string copy = spare.value().token;
  // Released in this order, the pool tells rgpud in this order: once the
  // holder's session is ended, rgpud knows the spare is gone too.
  client::release(spare.value());
  client::release(used.value());
  EXPECT_TRUE(holder.wait_for("(released)", 20s)) << holder.text;
  // A copy of the released lease, though unexpired and never presented,
  // admits nothing.
  Child& late = direct(copy);
  EXPECT_NE(late.finish(30s), 0) << late.text;
  EXPECT_NE(late.text.find("ended by the pool"), std::string::npos) << late.text;
}

TEST_F(PoolE2E, SampleProgramRunsUnchangedThroughRgpuPool) {
  start_rgpud("cpu-a", 1);
  Child& direct_env = client({}, kBin + "/rgpu-demo");
  EXPECT_EQ(direct_env.finish(120s), 0) << direct_env.text;
  auto run = Child::spawn({kBin + "/rgpu", "run", "--pool", pool_address_, "--kind", "cpu", "--priority", "high",
                           "--tenant", "research", "--", kBin + "/rgpu-demo"},
                          {"UCX_TLS=tcp", kLibraryPath});
  EXPECT_EQ(run->finish(120s), 0) << run->text;
}

}  // namespace
}  // namespace rgpu::pool::testing

namespace rgpu::pool::testing {
namespace {

// rgpu-pool with --history: the report asked of the running pool.
class PoolHistoryE2E : public PoolE2E {
 protected:
  std::vector<std::string> pool_extra() override { return {"--history", (dir_ / "history.jsonl").string()}; }
};

TEST_F(PoolHistoryE2E, ReportAskedOfThePoolShowsTheTenantsLease) {
  start_rgpud("cpu-a", 1, "1G");
  Child& c = client({"RGPU_REQUEST=mem=256M", "RGPU_TENANT=team-h"});
  ASSERT_TRUE(c.wait_for("ready count=1", 60s)) << c.text;
  EXPECT_EQ(c.finish(30s), 0) << c.text;
  const std::string out = (dir_ / "report.json").string();
  auto report = Child::spawn(
      {kBin + "/rgpu", "pool", "report", "--pool", pool_address_, "--since", "1h", "--json", out}, {});
  ASSERT_EQ(report->finish(20s), 0) << report->text;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "report is not JSON";
  bool found = false;
  for (const auto& t : j.at("tenants")) {
    if (t.at("tenant") == "team-h") {
      found = true;
      EXPECT_EQ(t.at("leases").get<int>(), 1) << t.dump();
    }
  }
  EXPECT_TRUE(found) << j.dump();
  // The daemon wrote the same lease to its file.
  std::ifstream file(dir_ / "history.jsonl");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"team-h\""), std::string::npos) << text;
}

// rgpu-pool with --metrics: what the scheduler did and holds, at /metrics.
class PoolMetricsE2E : public PoolE2E {
 protected:
  std::vector<std::string> pool_extra() override { return {"--metrics", "127.0.0.1:0"}; }

  // The pool's /metrics page, parsed; empty on any failure.
  std::vector<metrics::Sample> scrape() {
    const std::string prefix = "rgpu-pool metrics on ";
    if (!pool_->wait_for(prefix, 10s)) return {};
    const size_t at = pool_->text.find(prefix) + prefix.size();
    const std::string address = pool_->text.substr(at, pool_->text.find('\n', at) - at);
    const size_t colon = address.rfind(':');
    httplib::Client http(address.substr(0, colon), std::stoi(address.substr(colon + 1)));
    http.set_read_timeout(5);
    auto res = http.Get("/metrics");
    if (!res || res->status != 200) return {};
    auto page = metrics::parse_text(res->body);
    return page.is_ok() ? page.value() : std::vector<metrics::Sample>{};
  }
};

// The value of the sample `name` whose labels include `labels`, or -1.
double value_of(const std::vector<metrics::Sample>& page, const std::string& name,
                const std::vector<std::pair<std::string, std::string>>& labels) {
  for (const metrics::Sample& s : page) {
    if (s.name != name) continue;
    if (std::all_of(labels.begin(), labels.end(), [&](const auto& l) { return s.label(l.first) == l.second; })) {
      return s.value;
    }
  }
  return -1;
}

TEST_F(PoolMetricsE2E, PlacementsWaitsAndStateShowAtMetrics) {
  start_rgpud("cpu-m", 1, "1G");
  Child& c = client({"RGPU_REQUEST=mem=256M", "RGPU_TENANT=team-m"});
  ASSERT_TRUE(c.wait_for("ready count=1", 60s)) << c.text;
  // While it runs: its lease, then (the state gauges are set once a second).
  std::vector<metrics::Sample> page;
  const auto deadline = SteadyClock::now() + 10s;
  while (SteadyClock::now() < deadline) {
    page = scrape();
    if (value_of(page, "rgpu_pool_leases", {{"tenant", "team-m"}}) == 1) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(value_of(page, "rgpu_pool_leases", {{"tenant", "team-m"}}), 1);
  EXPECT_EQ(value_of(page, "rgpu_pool_leased_devices", {{"tenant", "team-m"}}), 1);
  EXPECT_EQ(value_of(page, "rgpu_pool_placements_total", {{"tenant", "team-m"}}), 1);
  EXPECT_EQ(value_of(page, "rgpu_pool_wait_seconds_count", {{"tenant", "team-m"}}), 1);
  EXPECT_EQ(value_of(page, "rgpu_pool_servers", {}), 1);
  EXPECT_EQ(value_of(page, "rgpu_pool_device_memory_bytes", {{"server", "cpu-m"}, {"device", "0"}, {"kind", "cpu"}}),
            double(1ull << 30));
  EXPECT_EQ(c.finish(30s), 0) << c.text;
  // Its end frees the lease: the tenant's series goes.
  const auto freed = SteadyClock::now() + 10s;
  while (SteadyClock::now() < freed && value_of(page, "rgpu_pool_leases", {{"tenant", "team-m"}}) != -1) {
    std::this_thread::sleep_for(100ms);
    page = scrape();
  }
  EXPECT_EQ(value_of(page, "rgpu_pool_leases", {{"tenant", "team-m"}}), -1);
  EXPECT_EQ(value_of(page, "rgpu_pool_placements_total", {{"tenant", "team-m"}}), 1);
}

TEST_F(PoolE2E, ReportAskedOfAPoolWithoutHistorySaysSo) {
  // Neither --history nor --config: no history is kept.
  auto bare = Child::spawn({kBin + "/rgpu-pool", "--listen", "127.0.0.1:0", "--key-file", key_file_}, {});
  const std::string address = listening_address(*bare);
  ASSERT_FALSE(address.empty()) << bare->text;
  auto report = Child::spawn({kBin + "/rgpu", "pool", "report", "--pool", address}, {});
  EXPECT_NE(report->finish(20s), 0);
  EXPECT_NE(report->text.find("keeps no history"), std::string::npos) << report->text;
}

// rgpu-pool with tenant keys (--auth-file): a request must prove its
// tenant's key, and rgpud (with the same keys) checks the session's.
class PoolAuthE2E : public PoolE2E {
 protected:
  std::vector<std::string> pool_extra() override {
    auth_file_ = (dir_ / "tenants").string();
    std::ofstream(auth_file_) << "research " << kResearchKey << "\n";
    chmod(auth_file_.c_str(), 0600);
    return {"--auth-file", auth_file_};
  }
  static constexpr const char* kResearchKey = "research-secret-0123";
  std::string auth_file_;
};

TEST_F(PoolAuthE2E, ClientsProveTheirTenantToThePool) {
  start_rgpud("cpu-a", 1, "1G", {"--auth-file", auth_file_});
  const std::vector<std::string> run = {kBin + "/rgpu", "run",      "--pool", pool_address_, "--kind",
                                        "cpu",          "--tenant", "research", "--",        kBin + "/rgpu-demo"};
  struct Case {
    std::string token, expect;
  };
  for (const Case& c : {Case{"", "no proof"}, Case{"not-the-key-0000", "does not match"}}) {
    std::vector<std::string> env = {"UCX_TLS=tcp", kLibraryPath};
    if (!c.token.empty()) env.push_back("RGPU_AUTH_TOKEN=" + c.token);
    auto refused = Child::spawn(run, env);
    EXPECT_NE(refused->finish(60s), 0) << refused->text;
    EXPECT_NE(refused->text.find(c.expect), std::string::npos) << refused->text;
  }
  // The tenant's key: placed, and the program runs on the server.
  auto placed = Child::spawn(run, {"UCX_TLS=tcp", kLibraryPath, std::string("RGPU_AUTH_TOKEN=") + kResearchKey});
  EXPECT_EQ(placed->finish(120s), 0) << placed->text;
  // The client library asking the pool itself (RGPU_POOL) proves it too.
  Child& library = client({"RGPU_TENANT=research", std::string("RGPU_AUTH_TOKEN=") + kResearchKey}, kBin + "/rgpu-demo");
  EXPECT_EQ(library.finish(120s), 0) << library.text;
}

// Two rgpu-pool instances (A, then B) sharing one real etcd; rgpud and the
// clients are given both addresses, A first.
class PoolEtcdE2E : public PoolE2E {
 protected:
  void SetUp() override {
    std::string why;
    if (!etcd_.start(&why)) {
      // Skipped only where no etcd is installed, and never in CI
      // (RGPU_TEST_STRICT=1); an etcd that is there but fails to start fails.
      if (etcd_binary().empty() && !strict_tests()) GTEST_SKIP() << why;
      FAIL() << why;
    }
    PoolE2E::SetUp();
    if (HasFatalFailure()) return;
    second_ = Child::spawn({kBin + "/rgpu-pool", "--listen", "127.0.0.1:0", "--key-file", key_file_, "--config",
                            (dir_ / "pool.toml").string(), "--etcd", etcd_.endpoint(), "--instance", "b"},
                           {});
    second_address_ = listening_address(*second_);
    ASSERT_FALSE(second_address_.empty()) << second_->text;
    first_address_ = pool_address_;
    pool_address_ = first_address_ + "," + second_address_;
  }
  std::vector<std::string> pool_extra() override { return {"--etcd", etcd_.endpoint(), "--instance", "a"}; }
  void TearDown() override {
    PoolE2E::TearDown();
    second_.reset();
  }

  size_t leases_seen_by(const std::string& address) {
    auto s = client::query_status({address}, 2s);
    return s.is_ok() ? s.value().root().getStatus().getLeases().size() : 999;
  }

  EtcdServer etcd_;
  std::unique_ptr<Child> second_;
  std::string first_address_, second_address_;
};

TEST_F(PoolEtcdE2E, AKilledInstancesLeaseStaysCountedOnTheOther) {
  start_rgpud("cpu-a", 1, "1G", {"--log-level", "info"});
  Child& rgpud = *servers_.back();
  Child& a = client({"RGPU_REQUEST=mem=700M"});
  ASSERT_TRUE(a.wait_for("ready count=1", 60s)) << a.text;
  // Granted by A, and B's view of etcd holds it too.
  EXPECT_EQ(leases_seen_by(first_address_), 1u);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    seen = leases_seen_by(second_address_) == 1;
    if (!seen) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(seen) << "instance b does not count the lease granted by a";
  pool_->kill_now();
  // rgpud moves to B; B must take it as the same server, its session alive.
  ASSERT_TRUE(rgpud.wait_for("registered with pool address=" + second_address_, 20s)) << rgpud.text;
  // The second client reaches B only; the device is still held by the
  // first, so it must wait, not be granted the same memory twice.
  Child& b = client({"RGPU_REQUEST=mem=700M"});
  ASSERT_TRUE(b.wait_for("rgpu: waiting: ", 30s)) << b.text;
  std::this_thread::sleep_for(500ms);
  b.pump(0);
  EXPECT_EQ(b.text.find("ready"), std::string::npos) << b.text;
  EXPECT_EQ(leases_seen_by(second_address_), 1u);
  // The first client ends: rgpud, now on B, reports it, and B places b.
  EXPECT_EQ(a.finish(30s), 0) << a.text;
  EXPECT_TRUE(b.wait_for("ready count=1", 60s)) << b.text;
}

}  // namespace
}  // namespace rgpu::pool::testing
