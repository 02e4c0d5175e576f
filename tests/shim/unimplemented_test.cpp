// Every exported but unimplemented driver function answers
// CUDA_ERROR_NOT_SUPPORTED and logs its name once.
#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

using AnyApi = CUresult (*)();  // the stubs ignore their arguments

std::vector<std::string> unimplemented() {
  auto implemented = implemented_names();
  std::vector<std::string> out;
  for (const auto& name : exported_names()) {
    if (!implemented.count(name)) out.push_back(name);
  }
  return out;
}

// Kept out of the bulk test so that its first log line is still to come.
std::string reserved_for_log_test() { return unimplemented().back(); }

// Runs fn with fd 2 sent to a file; returns what was written.
template <typename Fn>
std::string capture_stderr(Fn fn) {
  char path[] = "/tmp/rgpu_shim_test_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return {};
  }
  std::fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(path);
  return text;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Unimplemented, EveryStubReturnsNotSupported) {
  auto names = unimplemented();
  ASSERT_GE(names.size(), 100u);
  const std::string reserved = reserved_for_log_test();
  std::size_t called = 0;
  for (const auto& name : names) {
    if (name == reserved) continue;
    auto fn = function<AnyApi>(name.c_str());
    ASSERT_NE(fn, nullptr) << name;
    EXPECT_EQ(fn(), CUDA_ERROR_NOT_SUPPORTED) << name;
    ++called;
  }
  EXPECT_EQ(called, names.size() - 1);
}

TEST(Unimplemented, LogsItsNameOnceAcrossThreads) {
  setenv("RGPU_LOG_LEVEL", "warn", 1);
  const std::string name = reserved_for_log_test();
  auto fn = function<AnyApi>(name.c_str());
  ASSERT_NE(fn, nullptr) << name;
  std::atomic<int> not_supported{0};
  std::string log = capture_stderr([&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) not_supported += fn() == CUDA_ERROR_NOT_SUPPORTED;
      });
    }
    for (auto& th : threads) th.join();
  });
  EXPECT_EQ(not_supported.load(), 400);
  EXPECT_EQ(count(log, "api=" + name + " "), 1u) << log;
  EXPECT_NE(log.find("unimplemented"), std::string::npos) << log;
}

}  // namespace
}  // namespace rgpu::shim::test
