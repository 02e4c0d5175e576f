// Slices end to end (docs/sharing.md): rgpud with two CPU devices cut into
// slices, clients as separate processes through rgpu's client library, on
// loopback, every wait bounded. Five clients hold their slices at once, each
// sees only its own, numbered from 0, with the quota as its memory, and a
// sixth is refused; two sessions with shares 0.75 and 0.25 of one device
// get their kernels through in that ratio.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "child.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = uint64_t{1} << 20;

using rgpu::testing::Child;

// The number after `key` in the last line of `text` that has it (-1: none).
long long last_value(const std::string& text, const std::string& key) {
  const size_t at = text.rfind(key);
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + key.size());
}

class Slices : public ::testing::Test {
 protected:
  void start_server(std::vector<std::string> args, std::vector<std::string> env) {
    std::vector<std::string> argv = {std::string(RGPU_BIN_DIR) + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu"};
    argv.insert(argv.end(), args.begin(), args.end());
    env.push_back("UCX_TLS=tcp");
    server_ = Child::spawn(argv, env);
    ASSERT_TRUE(server_->wait_for("listening on ", std::chrono::seconds(30))) << server_->text;
    ASSERT_TRUE(server_->wait_for(" driver=", std::chrono::seconds(5))) << server_->text;
    const size_t at = server_->text.find("listening on ") + 13;
    address_ = server_->text.substr(at, server_->text.find(' ', at) - at);
  }

  std::unique_ptr<Child> client(const std::vector<std::string>& args, const std::string& request = "") {
    std::vector<std::string> argv = {std::string(RGPU_BIN_DIR) + "/slices_client"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string lib = RGPU_CLIENT_LIBRARY;
    std::vector<std::string> env = {"LD_PRELOAD=" + lib, "RGPU_SERVER=" + address_, "UCX_TLS=tcp",
                                    "LD_LIBRARY_PATH=" + lib.substr(0, lib.rfind('/')) + "/rgpu",
                                    "RGPU_CONNECT_TIMEOUT_MS=5000"};
    if (!request.empty()) env.push_back("RGPU_REQUEST=" + request);
    return Child::spawn(argv, env);
  }

  std::unique_ptr<Child> server_;
  std::string address_;
};

// Device 0: 384M@0.5, 256M@0.25, 128M@0.25; device 1: 512M@0.5, 256M@0.25,
// 128M@0.25. One client asks for two devices of 384M; four more ask for
// nothing and get one slice each; then nothing is free.
TEST_F(Slices, FiveClientsSeeOnlyTheirSlicesAndASixthIsRefused) {
  start_server({"--cpu-devices", "2", "--slices", "0:384M@0.5,256M@0.25,128M@0.25", "--slices",
                "1:512M@0.5,256M@0.25,128M@0.25"},
               {"RGPU_CPU_DEVICE_MEMORY=1G", "RGPU_CPU_THREADS=1"});
  std::vector<std::unique_ptr<Child>> clients;
  clients.push_back(client({"quota"}, "devices=2,mem=384M"));
  ASSERT_TRUE(clients[0]->wait_for("ready", std::chrono::seconds(60))) << clients[0]->text;
  for (int i = 0; i < 4; ++i) clients.push_back(client({"quota"}));
  for (auto& c : clients) ASSERT_TRUE(c->wait_for("ready", std::chrono::seconds(60))) << c->text;

  // The two-device client: its slices on distinct devices, ordinals 0 and 1.
  EXPECT_EQ(last_value(clients[0]->text, "ready count="), 2) << clients[0]->text;
  EXPECT_EQ(last_value(clients[0]->text, "device=0 total="), static_cast<long long>(384 * kMiB));
  EXPECT_EQ(last_value(clients[0]->text, "device=1 total="), static_cast<long long>(512 * kMiB));
  // The others: one slice each, device 0, together the four slices left.
  std::multiset<long long> totals;
  for (size_t i = 1; i < clients.size(); ++i) {
    EXPECT_EQ(last_value(clients[i]->text, "ready count="), 1) << clients[i]->text;
    totals.insert(last_value(clients[i]->text, "device=0 total="));
  }
  const std::multiset<long long> want = {256 * kMiB, 256 * kMiB, 128 * kMiB, 128 * kMiB};
  EXPECT_EQ(totals, want);
  // Every slice has a UUID of its own.
  std::set<std::string> uuids;
  for (auto& c : clients) {
    for (size_t at = c->text.find("uuid="); at != std::string::npos; at = c->text.find("uuid=", at + 1)) {
      uuids.insert(c->text.substr(at + 5, 32));
    }
  }
  EXPECT_EQ(uuids.size(), 6u);

  // Nothing is free: a sixth is refused, saying what it asked and what is free.
  auto sixth = client({"quota"});
  const int status = sixth->finish(std::chrono::seconds(60));
  ASSERT_TRUE(WIFEXITED(status)) << status << sixth->text;
  EXPECT_EQ(WEXITSTATUS(status), 3) << sixth->text;
  EXPECT_NE(sixth->text.find("no free slices fit: asked for 1 device(s); free: nothing"), std::string::npos)
      << sixth->text;

  // A slice is free again once its session ends.
  ASSERT_EQ(clients[4]->finish(std::chrono::seconds(30)), 0) << clients[4]->text;
  auto again = client({"quota"});
  ASSERT_TRUE(again->wait_for("ready", std::chrono::seconds(60))) << again->text;
  EXPECT_EQ(last_value(again->text, "device=0 total="), last_value(clients[4]->text, "device=0 total="));
  EXPECT_EQ(again->finish(std::chrono::seconds(30)), 0) << again->text;
  for (auto& c : clients) EXPECT_EQ(c->finish(std::chrono::seconds(30)), 0) << c->text;
}

// Two slices of one device whose memory is little more than theirs: one
// session fills its slice by each path that takes device memory (cuMemAlloc,
// module globals, virtual-memory chunks) and tries every path once more past
// its quota; each is refused, and the neighbour slice's session still gets
// all of its quota, exactly, by the driver and the runtime API.
TEST_F(Slices, AFullSliceLeavesItsNeighbourAllOfItsQuota) {
  start_server({"--cpu-devices", "1", "--slices", "0:128M@0.5,128M@0.5"}, {"RGPU_CPU_DEVICE_MEMORY=264M"});
  for (const char* path : {"alloc", "globals", "vmm"}) {
    SCOPED_TRACE(path);
    auto filler = client({"fill", path}, "mem=128M");
    ASSERT_TRUE(filler->wait_for("ready\n", std::chrono::seconds(60))) << filler->text;
    EXPECT_GE(last_value(filler->text, "held="), static_cast<long long>(120 * kMiB)) << filler->text;
    auto neighbour = client({"quota"}, "mem=128M");
    ASSERT_TRUE(neighbour->wait_for("ready", std::chrono::seconds(60))) << neighbour->text;
    EXPECT_EQ(last_value(neighbour->text, "device=0 total="), static_cast<long long>(128 * kMiB)) << neighbour->text;
    EXPECT_EQ(neighbour->finish(std::chrono::seconds(30)), 0) << neighbour->text;
    EXPECT_EQ(filler->finish(std::chrono::seconds(30)), 0) << filler->text;
  }
}

// Two slices of one device with shares 0.75 and 0.25 (of four kernel
// workers: three and one). Both run the same kernel over and over; over a
// window in which both run, measured in the slower one's completed launches,
// the faster completes three times as many, within 15%. No time is asserted.
// Shares hold in kernel time, so launch counts stand for it only while every
// launch costs the same: the kernel is compiled from its first launch
// (RGPU_CPU_JIT=1), as a switch from interpreted to compiled code inside the
// window would weigh one costly launch of one session against many cheap
// ones of the other.
TEST_F(Slices, ComputeSharesDivideTheDevice) {
  start_server({"--cpu-devices", "1", "--slices", "0:256M@0.75,256M@0.25"},
               {"RGPU_CPU_DEVICE_MEMORY=1G", "RGPU_CPU_THREADS=4", "RGPU_CPU_JIT=1"});
  auto fast = client({"spin", "30000"}, "share=0.75");
  auto slow = client({"spin", "30000"}, "share=0.25");
  // Both running, past the start (the compile, the first session alone).
  ASSERT_TRUE(fast->wait_for("launches=2\n", std::chrono::seconds(120))) << fast->text;
  ASSERT_TRUE(slow->wait_for("launches=8\n", std::chrono::seconds(120))) << slow->text;
  // The window opens and closes at completions of the slower session, so
  // its count is exact; the faster one's is read at the same moments.
  constexpr long long kWindow = 72;
  auto read_both = [&] {
    while (fast->pump(0) || slow->pump(0)) {
    }
  };
  read_both();
  for (int i = 0; i < 120 && !slow->pump(1000); ++i) {  // up to the next completion of the slow one
  }
  fast->pump(0);
  const long long slow0 = last_value(slow->text, "launches=");
  const long long fast0 = last_value(fast->text, "launches=");
  const auto deadline = Clock::now() + std::chrono::seconds(300);
  long long slow1 = slow0;
  while (slow1 < slow0 + kWindow && Clock::now() < deadline) {
    slow->pump(50);
    slow1 = last_value(slow->text, "launches=");
    while (fast->pump(0)) {
    }
  }
  const long long fast1 = last_value(fast->text, "launches=");
  ASSERT_GE(slow1, slow0 + kWindow) << "the slow session stalled";
  const double ratio = static_cast<double>(fast1 - fast0) / static_cast<double>(slow1 - slow0);
  std::printf("compute share ratio %.3f (fast %lld, slow %lld launches in the window)\n", ratio, fast1 - fast0,
              slow1 - slow0);
  EXPECT_NEAR(ratio, 3.0, 0.45);
  EXPECT_EQ(fast->finish(std::chrono::seconds(60)), 0) << fast->text;
  EXPECT_EQ(slow->finish(std::chrono::seconds(60)), 0) << slow->text;
}

}  // namespace
