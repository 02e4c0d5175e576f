// What the metrics tests share: a real rgpud (CPU device) with --metrics on
// loopback, a client workload run through `rgpu run`, and small helpers.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace rgpu::test {

namespace fs = std::filesystem;

// Runs argv with stdout piped back; the child is killed when this goes.
struct Child {
  pid_t pid = -1;
  int out = -1;
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }
  bool start(const std::vector<std::string>& args, bool pipe_out = true) {
    int fds[2] = {-1, -1};
    if (pipe_out && pipe(fds) != 0) return false;
    pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
      setpgid(0, 0);
      if (pipe_out) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
      }
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pipe_out) {
      close(fds[1]);
      out = fds[0];
    }
    return true;
  }
  // The rest of a stdout line that starts with `prefix`, within `timeout`.
  std::string wait_line(const std::string& prefix, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      size_t at = text.find(prefix);
      if (at != std::string::npos) {
        const size_t eol = text.find('\n', at);
        if (eol != std::string::npos) return text.substr(at + prefix.size(), eol - at - prefix.size());
      }
      pollfd p{out, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      const ssize_t n = read(out, buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    return "";
  }
  // The exit status, waiting at most `timeout`; -1 if still running.
  int wait(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  void stop() {
    if (pid > 0) {
      kill(-pid, SIGTERM);
      if (wait(std::chrono::seconds(10)) < 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
      pid = -1;
    }
    if (out >= 0) close(out);
    out = -1;
  }
  std::string text;
};

// A port that was free a moment ago on 127.0.0.1.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

inline std::string http_get(const std::string& host_port, const std::string& path, int* status = nullptr) {
  const size_t colon = host_port.rfind(':');
  httplib::Client c(host_port.substr(0, colon), std::atoi(host_port.c_str() + colon + 1));
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto res = c.Get(path);
  if (status) *status = res ? res->status : 0;
  return res ? res->body : "";
}

// rgpud on the CPU device with --metrics on a free loopback port.
class MetricsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("UCX_TLS", "tcp", 1);
    setenv("RGPU_CPU_DEVICE_MEMORY", "1G", 1);
    const std::string bin = RGPU_BIN_DIR;
    ASSERT_TRUE(rgpud_.start({bin + "/rgpud", "--device", "cpu", "--listen", "127.0.0.1:0", "--metrics",
                              "127.0.0.1:0", "--slices", "0:512M@0.5,256M@0.5"}));
    metrics_ = rgpud_.wait_line("rgpud metrics on ", std::chrono::seconds(30));
    ASSERT_FALSE(metrics_.empty()) << "rgpud did not report its metrics address: " << rgpud_.text;
    const std::string listen = rgpud_.wait_line("rgpud listening on ", std::chrono::seconds(30));
    listen_ = listen.substr(0, listen.find(' '));
    ASSERT_FALSE(listen_.empty());
  }
  // Starts the workload under `rgpu run` for `seconds` (or until `stop` exists).
  void start_client(Child* client, double seconds, const std::string& stop = "") {
    const std::string bin = RGPU_BIN_DIR;
    std::vector<std::string> args = {bin + "/rgpu", "run", "--server", listen_, "--", METRICS_CLIENT,
                                     std::to_string(seconds)};
    if (!stop.empty()) args.push_back(stop);
    ASSERT_TRUE(client->start(args));
  }

  Child rgpud_;
  std::string metrics_;  // host:port
  std::string listen_;
};

}  // namespace rgpu::test
