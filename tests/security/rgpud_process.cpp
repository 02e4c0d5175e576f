// RgpudProcess: fork, exec, read the "listening on" line, reap.
#include "rgpud_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

namespace rgpu::security {

std::string rgpu_bin_dir() { return RGPU_BIN_DIR; }

RgpudProcess::RgpudProcess(const std::vector<std::string>& args) {
  char tmpl[] = "/tmp/rgpud-security-XXXXXX";
  const int log_fd = mkstemp(tmpl);
  if (log_fd < 0) return;
  log_path_ = tmpl;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    close(log_fd);
    return;
  }
  std::vector<std::string> argv = {rgpu_bin_dir() + "/rgpud", "--device", "cpu", "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  // The environment is built here: between fork and exec of a threaded
  // process only async-signal-safe calls are allowed.
  std::vector<std::string> env = {"RGPU_CPU_DEVICE_MEMORY=1G"};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("RGPU_CPU_DEVICE_MEMORY=", 0) != 0) env.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(p[1], 1);
    dup2(log_fd, 2);
    execve(raw[0], raw.data(), envp.data());
    _exit(127);
  }
  close(p[1]);
  close(log_fd);
  out_ = p[0];
  if (pid_ < 0) return;
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (text.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{out_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  const std::string key = "listening on ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return;
  const size_t from = at + key.size();
  address_ = text.substr(from, text.find_first_of(" \n", from) - from);
}

RgpudProcess::~RgpudProcess() {
  if (pid_ > 0 && exit_.empty()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) close(out_);
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

bool RgpudProcess::alive() {
  if (pid_ <= 0) return false;
  if (!exit_.empty()) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    exit_ = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    exit_ = "waitpid failed";
  }
  return false;
}

std::string RgpudProcess::log_tail(size_t bytes) const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace rgpu::security
