// Two pool instances on one etcd, one of them a separate process killed
// (SIGKILL) mid-run while the other keeps placing: no lease is lost or
// granted twice, and the dead instance's liveness records expire.
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <atomic>
#include <random>

#include "etcd_test_util.h"
#include "pool_test_util.h"
#include "rgpu/pool/etcd_store.h"

#ifndef RGPU_POOL_ETCD_INSTANCE
#error "RGPU_POOL_ETCD_INSTANCE must name the instance binary"
#endif

namespace rgpu::pool {
namespace {

using testing::eventually;
using testing::req;
using testing::server;

// The child instance: its stdout read on a thread into what it reported.
class Child {
 public:
  bool start(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a test killed by its timeout
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      std::vector<std::string> copy = args;
      for (std::string& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      std::string buf;
      char chunk[4096];
      for (ssize_t n; (n = read(fd, chunk, sizeof(chunk))) > 0;) {
        buf.append(chunk, static_cast<size_t>(n));
        for (size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
          line(buf.substr(0, nl));
          buf.erase(0, nl + 1);
        }
      }
      close(fd);  // a cut-off last line is dropped: it was never reported
    });
    return true;
  }
  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (reader_.joinable()) reader_.join();
  }
  ~Child() { kill_now(); }

  std::mutex mu;
  bool ready = false;
  std::set<LeaseId> granted;
  std::set<LeaseId> releasing;

 private:
  void line(const std::string& l) {
    std::lock_guard<std::mutex> lock(mu);
    unsigned long long id = 0;
    if (l.rfind("ready ", 0) == 0) ready = true;
    if (std::sscanf(l.c_str(), "grant %llu", &id) == 1) granted.insert(id);
    if (std::sscanf(l.c_str(), "releasing %llu", &id) == 1) releasing.insert(id);
  }
  pid_t pid_ = -1;
  std::thread reader_;
};

TEST(EtcdKillTest, InstanceKilledMidRunLosesNoLeaseAndGrantsNoneTwice) {
  testing::EtcdServer etcd;
  std::string why;
  if (!etcd.start(&why)) {
    if (testing::etcd_binary().empty() && !testing::strict_tests()) GTEST_SKIP() << why;
    FAIL() << why;
  }
  const std::string prefix = "/rgpu/pool/kill/";
  PoolConfig cfg;
  cfg.heartbeat_interval_ms = 500;
  cfg.heartbeat_timeout_ms = 2000;
  cfg.queue_timeout_ms = 200;
  SystemClock clock;
  EtcdStoreOptions o;
  o.prefix = prefix;
  o.instance = "survivor";
  Result<std::unique_ptr<EtcdStore>> opened = EtcdStore::open(cfg, clock, {{etcd.endpoint()}, 2000}, o);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  EtcdStore& b = *opened.value();
  // The GPU servers heartbeat to the survivor (as rgpud does to the
  // instance it reaches).
  ASSERT_TRUE(b.register_server(server("s1", 4)).is_ok());
  ASSERT_TRUE(b.register_server(server("s2", 4)).is_ok());
  auto heartbeat = [&] {
    ASSERT_TRUE(b.heartbeat("s1", {}).is_ok());
    ASSERT_TRUE(b.heartbeat("s2", {}).is_ok());
  };
  auto has_server = [&](const std::string& id) {
    for (const ServerView& v : b.servers()) {
      if (v.info.id == id) return true;
    }
    return false;
  };

  Child child;
  ASSERT_TRUE(child.start({RGPU_POOL_ETCD_INSTANCE, etcd.endpoint(), prefix, "doomed", "doomed-cpu"}));
  ASSERT_TRUE(eventually([&] { std::lock_guard<std::mutex> l(child.mu); return child.ready; }, [] {}));
  ASSERT_TRUE(eventually([&] { return has_server("doomed-cpu"); }, [] {}));

  std::mt19937 rng(3);
  std::vector<Lease> mine;
  size_t my_grants = 0;
  auto take = [&](const Changes& ch) {
    for (const Grant& g : ch.granted) {
      mine.push_back(g.lease);
      my_grants += 1;
    }
  };
  auto last_beat = std::chrono::steady_clock::now();
  auto step = [&] {
    if (std::chrono::steady_clock::now() - last_beat > std::chrono::milliseconds(300)) {
      heartbeat();
      last_beat = std::chrono::steady_clock::now();
    }
    Result<Submitted> r = b.submit(req(1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    take(r.value().changes);
    take(b.tick());
    if (!mine.empty() && rng() % 2 == 0) {
      const size_t i = rng() % mine.size();
      const LeaseId id = mine[i].id;
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
      Result<Changes> rel = b.release(id);
      ASSERT_TRUE(rel.is_ok()) << rel.status().to_string();
      take(rel.value());
    }
  };
  // Both place and release on the same 8 devices until the child has made
  // a fair number of grants.
  ASSERT_TRUE(eventually([&] { std::lock_guard<std::mutex> l(child.mu); return child.granted.size() >= 30; }, step,
                         std::chrono::seconds(30)));
  child.kill_now();
  std::set<LeaseId> orphans;
  for (LeaseId id : child.granted) {
    if (!child.releasing.count(id)) orphans.insert(id);
  }

  // The survivor keeps placing while the dead one's records expire: its
  // instance record and the server only it kept alive.
  EtcdClient c({{etcd.endpoint()}, 2000});
  ASSERT_TRUE(eventually([&] { return !has_server("doomed-cpu"); }, step));
  EXPECT_TRUE(eventually([&] { return c.range(prefix + "instances/doomed").value().kvs.empty(); }, step));
  EXPECT_FALSE(c.range(prefix + "instances/survivor").value().kvs.empty());
  EXPECT_TRUE(c.range(prefix + "servers/doomed-cpu").value().kvs.empty());
  EXPECT_TRUE(has_server("s1") && has_server("s2"));

  // No lease lost: every lease the dead instance granted and did not
  // release is still recorded and held in the survivor's view, and its
  // client, coming over, can release it there.
  for (LeaseId id : orphans) {
    EXPECT_TRUE(b.lease(id).has_value()) << "lease " << id << " lost";
    EXPECT_EQ(c.range(prefix + "leases/" + std::to_string(id)).value().kvs.size(), 1u) << "lease " << id;
  }
  for (LeaseId id : orphans) EXPECT_TRUE(b.release(id).is_ok()) << "lease " << id;
  for (const Lease& l : mine) EXPECT_TRUE(b.release(l.id).is_ok());
  mine.clear();
  // Leases the dead one was releasing when it died may still be recorded,
  // and requests still queued here may yet be placed: release until none.
  EXPECT_TRUE(eventually([&] { return c.range(prefix + "leases/", true).value().kvs.empty(); }, [&] {
    for (const Grant& g : b.tick().granted) my_grants += 1, (void)b.release(g.lease.id);
    for (const Lease& l : b.leases()) (void)b.release(l.id);
  }));
  EXPECT_GT(my_grants, 10u);

  // No lease granted twice, in any state etcd went through.
  const testing::HistoryReport h = testing::check_history(etcd.endpoint(), prefix);
  EXPECT_TRUE(h.violations.empty()) << h.violations.size() << " violations, first: " << h.violations.front();
  EXPECT_GE(h.leases_created, my_grants + child.granted.size());
  EXPECT_TRUE(c.range(prefix + "leases/", true).value().kvs.empty());
  EXPECT_TRUE(c.range(prefix + "slices/", true).value().kvs.empty());
}

}  // namespace
}  // namespace rgpu::pool
