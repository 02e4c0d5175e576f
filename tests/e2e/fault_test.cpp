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

namespace {

using Clock = std::chrono::steady_clock;

// A child process with its stdout captured.
struct Child {
  pid_t pid = -1;
  int out = -1;
  std::string text;

  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept : pid(o.pid), out(o.out), text(std::move(o.text)) {
    o.pid = -1;
    o.out = -1;
  }

  static Child spawn(std::vector<std::string> argv, const std::vector<std::string>& env = {}) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    Child c;
    c.pid = fork();
    if (c.pid == 0) {
      dup2(p[1], 1);
      close(p[0]);
      close(p[1]);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(p[1]);
    c.out = p[0];
    fcntl(c.out, F_SETFL, O_NONBLOCK);
    return c;
  }

  // Reads until `needle` appears or the time is up.
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (text.find(needle) == std::string::npos && Clock::now() < deadline) {
      pollfd pfd{out, POLLIN, 0};
      if (poll(&pfd, 1, 50) > 0) {
        char buf[512];
        ssize_t n = read(out, buf, sizeof buf);
        if (n > 0) text.append(buf, n);
        if (n == 0) break;
      }
    }
    return text.find(needle) != std::string::npos;
  }

  // Waits for exit; returns the status or -1 on time-out.
  int wait_exit(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        wait_for("\x01", std::chrono::milliseconds(0));  // drain
        return status;
      }
      wait_for("\x01", std::chrono::milliseconds(20));
    }
    return -1;
  }

  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out >= 0) close(out);
  }
};

std::string bin_dir() { return RGPU_BIN_DIR; }
std::string preload_env() { return "LD_PRELOAD=" + std::string(RGPU_CLIENT_LIBRARY); }

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<Child>(Child::spawn(
        {bin_dir() + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu"}, {"RGPU_CPU_DEVICE_MEMORY=2G"}));
    ASSERT_TRUE(server_->wait_for("\n", std::chrono::seconds(20))) << server_->text;
    auto at = server_->text.find("listening on ");
    ASSERT_NE(at, std::string::npos) << server_->text;
    address_ = server_->text.substr(at + 13, server_->text.find(' ', at + 13) - at - 13);
  }

  Child client(const std::string& mode) {
    return Child::spawn({bin_dir() + "/fault_client", mode}, {preload_env(), "RGPU_SERVER=" + address_});
  }

  size_t free_memory() {
    Child c = client("meminfo");
    EXPECT_TRUE(c.wait_for("total=", std::chrono::seconds(20))) << c.text;
    auto at = c.text.find("free=");
    return at == std::string::npos ? 0 : std::stoull(c.text.substr(at + 5));
  }

  std::unique_ptr<Child> server_;
  std::string address_;
};

TEST_F(Faults, KilledClientLeavesServerServingAndReturnsItsMemory) {
  size_t before = free_memory();
  ASSERT_GT(before, 0u);
  Child hog = client("hog");
  ASSERT_TRUE(hog.wait_for("ready", std::chrono::seconds(20))) << hog.text;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // mid-transfer
  size_t during = free_memory();                                // the server serves others meanwhile
  EXPECT_LE(during + (256u << 20), before);
  kill(hog.pid, SIGKILL);
  ASSERT_NE(hog.wait_exit(std::chrono::seconds(5)), -1);
  size_t after = 0;
  auto deadline = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < deadline && (after = free_memory()) != before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(after, before) << "the killed client's 256 MiB were not returned";
}

TEST_F(Faults, KilledServerGivesTheClientAnErrorNotAHang) {
  Child spin = client("spin");
  ASSERT_TRUE(spin.wait_for("ready", std::chrono::seconds(20))) << spin.text;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(server_->pid, SIGKILL);
  int status = spin.wait_exit(std::chrono::seconds(15));
  ASSERT_NE(status, -1) << "client still hanging; output: " << spin.text;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << spin.text;
  EXPECT_NE(spin.text.find("error=CUDA_ERROR_"), std::string::npos) << spin.text;
}

TEST(FaultsNoServer, UnreachableServerFailsCuInitQuickly) {
  // A port nobody listens on: bind one and close it.
  Child c = Child::spawn({bin_dir() + "/fault_client", "init"},
                         {preload_env(), "RGPU_SERVER=127.0.0.1:9", "RGPU_CONNECT_TIMEOUT_MS=3000"});
  ASSERT_TRUE(c.wait_for("init=", std::chrono::seconds(15))) << c.text;
  EXPECT_NE(c.text.find("init=CUDA_ERROR_NO_DEVICE"), std::string::npos) << c.text;
  EXPECT_EQ(c.wait_exit(std::chrono::seconds(5)) >> 8, 0);
}

TEST(FaultsNoServer, MissingServerSettingIsAClearError) {
  Child c = Child::spawn({bin_dir() + "/fault_client", "init"}, {preload_env(), "RGPU_SERVER="});
  ASSERT_TRUE(c.wait_for("init=", std::chrono::seconds(15))) << c.text;
  EXPECT_NE(c.text.find("init=CUDA_ERROR_NO_DEVICE"), std::string::npos) << c.text;
}

}  // namespace
