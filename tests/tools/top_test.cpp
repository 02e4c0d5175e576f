// `rgpu top` in a real terminal (tmux): against a live rgpud with one client,
// its screen shows the device, the slices and the session with rates, and q
// quits it.
#include <fstream>

#include "metrics_fixture.h"

namespace rgpu::test {
namespace {

// Runs tmux on a private socket; the output of `args`, or "" on failure.
std::string tmux(const std::string& socket, const std::string& args) {
  const std::string cmd = "tmux -S " + socket + " " + args + " 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) return "";
  }
  return out;
}

using TopInTerminal = MetricsServer;

TEST_F(TopInTerminal, ShowsDevicesSlicesAndSessionRatesThenQuits) {
  if (system("command -v tmux >/dev/null 2>&1") != 0) GTEST_SKIP() << "no tmux";
  char tmpl[] = "/tmp/rgpu-top-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string stop = (dir / "stop").string();
  Child client;
  start_client(&client, 60, stop);

  const std::string socket = (dir / "tmux.sock").string();
  const std::string top = std::string(RGPU_BIN_DIR) + "/rgpu top --metrics http://" + metrics_ + "/metrics";
  ASSERT_EQ(system(("tmux -S " + socket + " new-session -d -s top -x 160 -y 40 '" + top + "; sleep 30'").c_str()), 0);
  std::string screen;
  auto shows_all = [&] {
    return screen.find("rgpu CPU device 0") != std::string::npos &&  // the device row
           screen.find("0.1 ") != std::string::npos &&                // the second slice
           screen.find("metrics_client") != std::string::npos &&      // the session's program
           screen.find("MiB/s") != std::string::npos;                 // a rate: two scrapes seen, bytes moving
  };
  for (int i = 0; i < 200 && !shows_all(); ++i) {  // at most ~20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    screen = tmux(socket, "capture-pane -p -t top");
  }
  EXPECT_TRUE(shows_all()) << screen;
  EXPECT_NE(screen.find("server http://" + metrics_), std::string::npos) << screen;
  EXPECT_NE(screen.find("default"), std::string::npos) << "the tenant column\n" << screen;

  // q quits: the pane then runs only the trailing sleep, and top's frame stops changing.
  tmux(socket, "send-keys -t top q");
  bool quit = false;
  for (int i = 0; i < 100 && !quit; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    quit = tmux(socket, "list-panes -t top -F '#{pane_current_command}'").find("sleep") != std::string::npos;
  }
  EXPECT_TRUE(quit) << "rgpu top did not quit on q";
  tmux(socket, "kill-server");
  std::ofstream(stop) << "";
  EXPECT_EQ(client.wait(std::chrono::seconds(30)), 0) << client.text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rgpu::test
