// One program, two rgpud servers (RGPU_SERVER=A,B) on loopback: the test
// starts both, server A with one CPU device of 1 GiB and server B with two
// of 2 GiB, and runs two_servers.cu through `rgpu run --server A,B`. The
// program's devices are A's then B's; each is recognised by its size.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kGiB1 = "1073741824";
constexpr const char* kGiB2 = "2147483648";

// A child process with its stdout and stderr captured together.
class Child {
 public:
  Child(std::vector<std::string> argv, const std::vector<std::string>& env) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      dup2(p[1], 2);
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
    out_ = p[0];
    fcntl(out_, F_SETFL, O_NONBLOCK);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
  }

  // Reads until `needle` appears, the output ends or the time is up.
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (text_.find(needle) == std::string::npos && Clock::now() < deadline) {
      pollfd pfd{out_, POLLIN, 0};
      if (poll(&pfd, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = read(out_, buf, sizeof buf);
        if (n > 0) text_.append(buf, static_cast<size_t>(n));
        if (n == 0) break;
      }
    }
    return text_.find(needle) != std::string::npos;
  }

  // The exit status (as waitpid gives it), or -1 when it ran past `limit`.
  int wait_exit(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        wait_for("\x01", std::chrono::milliseconds(100));  // what is left in the pipe
        return status;
      }
      wait_for("\x01", std::chrono::milliseconds(20));
    }
    return -1;
  }

  const std::string& text() const { return text_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string text_;
};

std::string bin(const char* name) { return std::string(RGPU_BIN_DIR) + "/" + name; }

// An rgpud with `devices` CPU devices of `memory` bytes each; its address.
std::unique_ptr<Child> start_server(const char* devices, const char* memory, std::string* address) {
  auto server = std::make_unique<Child>(
      std::vector<std::string>{bin("rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu", "--cpu-devices", devices},
      std::vector<std::string>{std::string("RGPU_CPU_DEVICE_MEMORY=") + memory});
  if (!server->wait_for("listening on ", std::chrono::seconds(30)) || !server->wait_for("\n", std::chrono::seconds(5))) {
    return nullptr;
  }
  const std::string& t = server->text();
  const size_t at = t.find("listening on ") + 13;
  *address = t.substr(at, t.find_first_of(" \n", at) - at);
  return server;
}

class TwoServers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    a_ = start_server("1", kGiB1, &address_a_).release();
    b_ = start_server("2", kGiB2, &address_b_).release();
  }
  static void TearDownTestSuite() {
    delete a_;
    delete b_;
    a_ = b_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(a_, nullptr) << "server A did not start";
    ASSERT_NE(b_, nullptr) << "server B did not start";
  }

  // Runs the program under `rgpu run --server S1 [--server S2]` (each S a
  // list or one address); returns its exit status, its output in *out.
  static int run(const std::vector<std::string>& servers, const std::string& mode, std::vector<std::string> env,
                 std::string* out) {
    env.push_back("UCX_TLS=tcp");
    env.push_back("RGPU_CONNECT_TIMEOUT_MS=3000");
    std::vector<std::string> argv = {bin("rgpu"), "run"};
    for (const auto& s : servers) argv.insert(argv.end(), {"--server", s});
    argv.insert(argv.end(), {"--", TWO_SERVERS_PROGRAM, mode});
    Child program(argv, env);
    const int status = program.wait_exit(std::chrono::seconds(90));
    *out = program.text();
    return status;
  }
  static std::vector<std::string> both() { return {address_a_ + "," + address_b_}; }

  static Child* a_;
  static Child* b_;
  static std::string address_a_, address_b_;
};

Child* TwoServers::a_ = nullptr;
Child* TwoServers::b_ = nullptr;
std::string TwoServers::address_a_, TwoServers::address_b_;

TEST_F(TwoServers, TheProgramSeesEveryServersDevicesInOrderAndCopiesBetweenThem) {
  std::string out;
  const int status = run(both(), "all", {}, &out);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("devices=3\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("device 0 total=") + kGiB1 + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("device 1 total=") + kGiB2 + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("device 2 total=") + kGiB2 + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS two_servers"), std::string::npos) << out;
  for (const char* figure : {"peer copy ", "host copies "}) {
    const size_t at = out.find(figure);
    if (at != std::string::npos) std::printf("%s\n", out.substr(at, out.find('\n', at) - at).c_str());
  }
}

TEST_F(TwoServers, VisibleDevicesByIndexSelectsAmongAllServersDevices) {
  std::string out;
  // Index 1 is the second server's first device (the servers given as two options).
  const int status = run({address_a_, address_b_}, "one", {"CUDA_VISIBLE_DEVICES=1"}, &out);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("devices=1\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("device 0 total=") + kGiB2 + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS two_servers"), std::string::npos) << out;
}

TEST_F(TwoServers, VisibleDevicesByUuidSelectsTheSecondServersDevice) {
  std::string out;
  // CPU device N's UUID ends in N: device 1 exists only on server B.
  const int status =
      run(both(), "one", {"CUDA_VISIBLE_DEVICES=GPU-72677075-2d63-7075-2d64-657600000001"}, &out);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("devices=1\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("device 0 total=") + kGiB2 + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS two_servers"), std::string::npos) << out;
}

TEST_F(TwoServers, AServerThatIsDownAtStartIsAClearError) {
  // A port nothing listens on: the error names it and its place in the list.
  std::string out;
  const std::string down = "127.0.0.1:1";
  const int status = run({address_a_ + "," + down}, "all", {}, &out);
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("server 2 of 2 (" + down + ")"), std::string::npos) << out;
  EXPECT_NE(out.find("FAIL no devices"), std::string::npos) << out;
}

}  // namespace
