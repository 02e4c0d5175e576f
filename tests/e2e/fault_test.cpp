// Faults: a client killed mid-transfer, a server killed under a client, and a
// server that is not there. The test starts rgpud and the clients itself, on
// loopback, with every wait bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "child.h"

namespace {

using rgpu::testing::Child;
using rgpu::testing::listening_address;
using Clock = std::chrono::steady_clock;

std::string bin_dir() { return RGPU_BIN_DIR; }
std::string preload_env() { return "LD_PRELOAD=" + std::string(RGPU_CLIENT_LIBRARY); }

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = Child::spawn({bin_dir() + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu"},
                           {"RGPU_CPU_DEVICE_MEMORY=2G"});
    address_ = listening_address(*server_);
    ASSERT_FALSE(address_.empty()) << server_->text;
  }

  std::unique_ptr<Child> client(const std::string& mode) {
    return Child::spawn({bin_dir() + "/fault_client", mode}, {preload_env(), "RGPU_SERVER=" + address_});
  }

  size_t free_memory() {
    auto c = client("meminfo");
    EXPECT_TRUE(c->wait_for("total=", std::chrono::seconds(20))) << c->text;
    auto at = c->text.find("free=");
    return at == std::string::npos ? 0 : std::stoull(c->text.substr(at + 5));
  }

  std::unique_ptr<Child> server_;
  std::string address_;
};

TEST_F(Faults, KilledClientLeavesServerServingAndReturnsItsMemory) {
  size_t before = free_memory();
  ASSERT_GT(before, 0u);
  auto hog = client("hog");
  ASSERT_TRUE(hog->wait_for("ready", std::chrono::seconds(20))) << hog->text;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // mid-transfer
  size_t during = free_memory();                                // the server serves others meanwhile
  EXPECT_LE(during + (256u << 20), before);
  hog->kill_now();
  size_t after = 0;
  auto deadline = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < deadline && (after = free_memory()) != before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(after, before) << "the killed client's 256 MiB were not returned";
}

TEST_F(Faults, KilledServerGivesTheClientAnErrorNotAHang) {
  auto spin = client("spin");
  ASSERT_TRUE(spin->wait_for("ready", std::chrono::seconds(20))) << spin->text;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server_->kill_now();
  int status = spin->finish(std::chrono::seconds(15));
  ASSERT_NE(status, -1) << "client still hanging; output: " << spin->text;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << spin->text;
  EXPECT_NE(spin->text.find("error=CUDA_ERROR_"), std::string::npos) << spin->text;
}

TEST(FaultsNoServer, UnreachableServerFailsCuInitQuickly) {
  // A port nobody listens on: bind one and close it.
  auto c = Child::spawn({bin_dir() + "/fault_client", "init"},
                        {preload_env(), "RGPU_SERVER=127.0.0.1:9", "RGPU_CONNECT_TIMEOUT_MS=3000"});
  ASSERT_TRUE(c->wait_for("init=", std::chrono::seconds(15))) << c->text;
  EXPECT_NE(c->text.find("init=CUDA_ERROR_NO_DEVICE"), std::string::npos) << c->text;
  EXPECT_EQ(c->finish(std::chrono::seconds(5)), 0) << c->text;
}

TEST(FaultsNoServer, MissingServerSettingIsAClearError) {
  auto c = Child::spawn({bin_dir() + "/fault_client", "init"}, {preload_env(), "RGPU_SERVER="});
  ASSERT_TRUE(c->wait_for("init=", std::chrono::seconds(15))) << c->text;
  EXPECT_NE(c->text.find("init=CUDA_ERROR_NO_DEVICE"), std::string::npos) << c->text;
}

}  // namespace
