// A real rgpud started by a test: a child process on 127.0.0.1 with the CPU
// device, its log kept in a file for failure messages.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace rgpu::security {

// Owns the child: the destructor kills it (SIGKILL) and reaps it.
// Thread-compatible.
class RgpudProcess {
 public:
  // Starts `rgpud --device cpu --listen 127.0.0.1:0 ARGS...` and waits (at
  // most 30 s) until it prints its address; check ok() afterwards.
  explicit RgpudProcess(const std::vector<std::string>& args);
  ~RgpudProcess();
  RgpudProcess(const RgpudProcess&) = delete;
  RgpudProcess& operator=(const RgpudProcess&) = delete;

  bool ok() const { return !address_.empty(); }
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // Whether the process is still running (waitpid WNOHANG); once it has
  // exited, exit_description() says how.
  bool alive();
  std::string exit_description() const { return exit_; }
  // The end of its log (stderr), for failure messages.
  std::string log_tail(size_t bytes = 4000) const;

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string address_;
  std::string log_path_;
  std::string exit_;
};

// The folder that holds rgpud (and the CPU device library next to it).
std::string rgpu_bin_dir();

}  // namespace rgpu::security
