// Clients killed at random points of their work, one after another, while
// other clients keep working: the server must go on serving the clients it
// has and accept new ones promptly after every kill. Run once per transport
// (UCX_TLS from ctest). The seed of the random points is printed; set
// RGPU_TEST_SEED to replay a run.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child.h"

namespace {

using rgpu::testing::Child;
using rgpu::testing::listening_address;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kKills = 50;
// The longest a new client may wait for its first answer after a kill, and
// the longest an existing client may go without a checked round. The stall
// this guards against held new clients for several seconds after a kill;
// 2 s catches it, and leaves room for a 2-core machine running the rest of
// the suite beside it, where the steady client's longest gap has been
// measured at 0.9 s with no stall (and once, in the full suite, above 1 s).
constexpr auto kServedWithin = 2000ms;

const std::string kBin = RGPU_BIN_DIR;
const std::string kPreload = std::string("LD_PRELOAD=") + RGPU_CLIENT_LIBRARY;

long long ms(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

class KillStorm : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = Child::spawn({kBin + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu"}, {});
    address_ = listening_address(*server_);
    ASSERT_FALSE(address_.empty()) << server_->text;
  }

  std::unique_ptr<Child> client(std::vector<std::string> args) {
    args.insert(args.begin(), kBin + "/fault_client");
    return Child::spawn(std::move(args), {kPreload, "RGPU_SERVER=" + address_});
  }

  // A new client's time from start to its first answer (cuInit, a context
  // and cuMemGetInfo), or -1 if it got none within 30 s.
  long long probe(size_t* free_bytes = nullptr) {
    const auto t0 = Clock::now();
    auto c = client({"meminfo"});
    if (!c->wait_for("total=", 30s)) {
      ADD_FAILURE() << "a new client was not served: " << c->text;
      return -1;
    }
    const long long took = ms(Clock::now() - t0);
    if (free_bytes != nullptr) *free_bytes = std::stoull(c->text.substr(c->text.find("free=") + 5));
    EXPECT_EQ(c->finish(10s), 0) << c->text;
    return took;
  }

  void TearDown() override {
    if (!HasFailure() || server_ == nullptr) return;
    while (server_->pump(0)) {
    }
    std::printf("rgpud's log:\n%s\n", server_->text.c_str());
  }

  std::unique_ptr<Child> server_;
  std::string address_;
};

TEST_F(KillStorm, ClientsKilledMidWorkLeaveTheServerServing) {
  const char* given = std::getenv("RGPU_TEST_SEED");
  const unsigned seed = given != nullptr ? static_cast<unsigned>(std::strtoul(given, nullptr, 10))
                                         : static_cast<unsigned>(std::random_device{}());
  std::printf("kill storm: seed %u (RGPU_TEST_SEED=%u replays it)\n", seed, seed);
  std::mt19937 random(seed);

  size_t free_before = 0;
  // The first client pays for loading the CPU device: not a kill's cost.
  ASSERT_GE(probe(&free_before), 0);
  const long long baseline = probe();
  ASSERT_GE(baseline, 0);

  // Clients that live through the storm: one checks every byte of small
  // round trips and reports its longest gap, one keeps the device busy.
  auto steady = client({"steady"});
  ASSERT_TRUE(steady->wait_for("ready", 30s)) << steady->text;
  auto busy = client({"victim", "async1m"});
  ASSERT_TRUE(busy->wait_for("ready", 30s)) << busy->text;

  const std::vector<std::string> kinds = {"htod64m", "dtoh64m", "async1m", "small", "memset"};
  long long worst = 0;
  int worst_at = -1;
  for (int i = 0; i < kKills; ++i) {
    const std::string& kind = kinds[static_cast<size_t>(i) % kinds.size()];
    auto victim = client({"victim", kind});
    ASSERT_TRUE(victim->wait_for("ready", 30s)) << "victim " << i << " (" << kind << "): " << victim->text;
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 150));
    victim->kill_now();
    while (server_->pump(0)) {  // rgpud must never block on a full log pipe
    }
    const long long waited = probe();
    ASSERT_GE(waited, 0) << "after killing victim " << i << " (" << kind << ")";
    if (waited > worst) {
      worst = waited;
      worst_at = i;
    }
    ASSERT_EQ(steady->text.find("error="), std::string::npos) << steady->text;
    ASSERT_EQ(steady->text.find("wrong"), std::string::npos) << steady->text;
    steady->pump(0);
  }
  while (steady->pump(0)) {
  }
  long long steady_gap = 0;
  for (size_t at = 0; (at = steady->text.find("maxgap_ms=", at)) != std::string::npos; at += 10) {
    steady_gap = std::max(steady_gap, std::stoll(steady->text.substr(at + 10)));
  }
  std::printf("kill storm: %d clients killed; a new client's first answer took %lld ms at worst (after kill %d), "
              "%lld ms with no kill before it; the steady client's longest gap was %lld ms\n",
              kKills, worst, worst_at, baseline, steady_gap);
  EXPECT_EQ(steady->text.find("error="), std::string::npos) << steady->text;
  EXPECT_EQ(steady->text.find("wrong"), std::string::npos) << steady->text;
  EXPECT_LE(worst, ms(kServedWithin)) << "a new client waited too long after kill " << worst_at;
  EXPECT_LE(steady_gap, ms(kServedWithin)) << "an existing client was not served for that long";

  // Every killed session's memory comes back.
  busy->kill_now();
  steady->kill_now();
  size_t free_after = 0;
  const auto deadline = Clock::now() + 15s;
  while (probe(&free_after) >= 0 && free_after != free_before && Clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(free_after, free_before) << "memory of killed sessions was not returned";
}

}  // namespace
