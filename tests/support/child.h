// Child processes for end-to-end tests (rgpud, rgpu-pool, clients): stdin a
// pipe the test closes to stop the child, stdout and stderr captured
// together, every wait bounded.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace rgpu::testing {

using SteadyClock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int in = -1;
  int out = -1;
  int status = -1;
  std::string text;

  static std::unique_ptr<Child> spawn(std::vector<std::string> argv, std::vector<std::string> env) {
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) std::abort();
    auto c = std::make_unique<Child>();
    c->pid = fork();
    if (c->pid == 0) {
      dup2(to[0], 0);
      dup2(from[1], 1);
      dup2(from[1], 2);
      for (auto& e : env) putenv(e.data());
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(to[0]);
    close(from[1]);
    c->in = to[1];
    c->out = from[0];
    fcntl(c->out, F_SETFL, O_NONBLOCK);
    return c;
  }

  bool pump(int ms) {
    pollfd p{out, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(out, buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    return n > 0;
  }

  // Waits for `needle` in the output; stops early when the child exited.
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit) {
    const auto deadline = SteadyClock::now() + limit;
    while (text.find(needle) == std::string::npos && SteadyClock::now() < deadline) {
      if (!pump(10) && pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        while (pump(0)) {
        }
        break;
      }
    }
    return text.find(needle) != std::string::npos;
  }

  // Closes stdin and waits for the exit status (-1: not within the limit).
  int finish(std::chrono::seconds limit) {
    if (in >= 0) close(in);
    in = -1;
    if (pid < 0) return status;
    const auto deadline = SteadyClock::now() + limit;
    while (SteadyClock::now() < deadline) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        while (pump(0)) {
        }
        return status;
      }
      pump(20);
    }
    return -1;
  }

  void kill_now() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      pid = -1;
    }
  }

  ~Child() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 200 && waitpid(pid, nullptr, WNOHANG) == 0; ++i) usleep(10000);
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (in >= 0) close(in);
    if (out >= 0) close(out);
  }
};

// The first "listening on ADDR" a child printed.
inline std::string listening_address(Child& c) {
  if (!c.wait_for("listening on ", std::chrono::seconds(30))) return "";
  const size_t at = c.text.find("listening on ") + 13;
  c.wait_for("\n", std::chrono::seconds(1));
  const size_t end = c.text.find_first_of(" \n", at);
  return c.text.substr(at, end - at);
}

}  // namespace rgpu::testing
