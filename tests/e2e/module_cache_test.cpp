// The server's module cache on disk: a program run again under `rgpu run
// --module-cache DIR` sends no module bytes; a damaged file is sent again.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A field of a flat JSON line, as a number (-1 when absent).
long long field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + key.size());
}

class ModuleCacheE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rgpu-module-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    cache_ = root_ / "cache";
    stats_ = root_ / "stats.jsonl";
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs the client under rgpu run; returns its statistics line.
  std::string run_once() {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("RGPU_STATS", stats_.c_str(), 1);
      const std::string rgpu = std::string(RGPU_BIN_DIR) + "/rgpu";
      execl(rgpu.c_str(), "rgpu", "run", "--device", "cpu", "--module-cache", cache_.c_str(), "--",
            MODULE_CACHE_CLIENT, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client failed, status " << status;
    std::ifstream in(stats_);
    std::string line, last;
    while (std::getline(in, line)) last = line;
    return last;
  }

  fs::path root_, cache_, stats_;
};

TEST_F(ModuleCacheE2e, SecondRunSendsNoModuleBytes) {
  const std::string first = run_once();
  EXPECT_GT(field(first, "module_bytes_sent"), 0) << first;
  EXPECT_EQ(field(first, "modules_sent"), 1) << first;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache_)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "one image file expected";
  EXPECT_EQ(files[0].filename().string().size(), 64u) << "named by its SHA-256";
  EXPECT_EQ(fs::status(cache_).permissions() & fs::perms::all, fs::perms::owner_all);

  const std::string second = run_once();  // a new rgpud, the same folder
  EXPECT_EQ(field(second, "module_bytes_sent"), 0) << second;
  EXPECT_EQ(field(second, "modules_cached"), 1) << second;

  // A damaged file is not trusted: the next run sends the image again.
  std::ofstream(files[0], std::ios::trunc) << "not the image";
  const std::string third = run_once();
  EXPECT_EQ(field(third, "module_bytes_sent"), field(first, "module_bytes_sent")) << third;
  const std::string fourth = run_once();
  EXPECT_EQ(field(fourth, "module_bytes_sent"), 0) << fourth;
}

TEST_F(ModuleCacheE2e, UnusableFolderStopsTheServer) {
  std::ofstream(root_ / "file") << "x";
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string rgpud = std::string(RGPU_BIN_DIR) + "/rgpud";
    const std::string bad = (root_ / "file").string();
    execl(rgpud.c_str(), "rgpud", "--device", "cpu", "--module-cache", bad.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 127) << status;
}

}  // namespace
