// Kernel faults through rgpu: an out-of-bounds kernel and a failed device
// assert give sticky errors to their own client's context while another
// client of the same server keeps working; an instruction the CPU device
// cannot run is a launch error; an endless kernel meets the CPU device's
// watchdog (on a server of its own, started here with a short watchdog).
// Other clients run as child processes; every wait is bounded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels_e2e.h"

namespace rgpu::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// A child process with stdin and stdout connected to pipes. Owns the process
// (killed if still running when destroyed); move-only; not thread-safe.
class Child {
 public:
  // `set` holds NAME=VALUE entries added to this process's environment,
  // `unset` names removed from it.
  static std::unique_ptr<Child> spawn(std::vector<std::string> argv, const std::vector<std::string>& set = {},
                                      const std::vector<std::string>& unset = {}) {
    int out[2], in[2];
    if (pipe(out) != 0) return nullptr;
    if (pipe(in) != 0) {
      close(out[0]);
      close(out[1]);
      return nullptr;
    }
    pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], 1);
      dup2(in[0], 0);
      close(out[0]);
      close(out[1]);
      close(in[0]);
      close(in[1]);
      for (const auto& name : unset) unsetenv(name.c_str());
      for (const auto& e : set) {
        auto eq = e.find('=');
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    close(in[0]);
    auto c = std::unique_ptr<Child>(new Child());
    c->pid_ = pid;
    c->out_ = out[0];
    c->in_ = in[1];
    fcntl(c->out_, F_SETFL, O_NONBLOCK);
    return c;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    close_stdin();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }

  // Reads until `needle` appears, the output ends, or the time is up.
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (text_.find(needle) == std::string::npos && Clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      char buf[512];
      ssize_t n = read(out_, buf, sizeof buf);
      if (n > 0) text_.append(buf, static_cast<size_t>(n));
      if (n == 0) break;
    }
    return text_.find(needle) != std::string::npos;
  }
  // The value after "key=" up to the end of its line, or "" when absent.
  std::string value(const std::string& key) const {
    auto at = text_.find(key + "=");
    if (at == std::string::npos) return "";
    at += key.size() + 1;
    return text_.substr(at, text_.find_first_of(" \n", at) - at);
  }
  // Waits for the exit; returns the wait status, or -1 on time-out.
  int wait_exit(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (pid_ > 0 && Clock::now() < deadline) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      wait_for("\x01", std::chrono::milliseconds(20));
    }
    return -1;
  }
  void close_stdin() {
    if (in_ >= 0) close(in_);
    in_ = -1;
  }
  const std::string& text() const { return text_; }
  void signal(int sig) const {
    if (pid_ > 0) kill(pid_, sig);
  }

 private:
  Child() = default;
  pid_t pid_ = -1;
  int out_ = -1, in_ = -1;
  std::string text_;
};

// Another client of the server this test program uses (the environment that
// `rgpu run` gave it carries the preload and RGPU_SERVER).
std::unique_ptr<Child> client(const std::string& mode, const std::vector<std::string>& set = {}) {
  return Child::spawn({RGPU_KERNELS_CLIENT, mode}, set);
}

class KernelFaults : public KernelTest {};

TEST_F(KernelFaults, OutOfBoundsIsStickyForItsContextOnly) {
  ASSERT_NE(std::getenv("RGPU_SERVER"), nullptr) << "run this test through `rgpu run`";
  auto faulty = client("oob");
  ASSERT_TRUE(faulty);
  ASSERT_TRUE(faulty->wait_for("ready", std::chrono::seconds(30))) << faulty->text();
  EXPECT_EQ(faulty->value("launch"), "CUDA_SUCCESS") << faulty->text();
  EXPECT_EQ(faulty->value("sync"), "CUDA_ERROR_ILLEGAL_ADDRESS") << faulty->text();
  // Sticky: every later call in that context fails the same way.
  EXPECT_EQ(faulty->value("sync_again"), "CUDA_ERROR_ILLEGAL_ADDRESS") << faulty->text();
  EXPECT_EQ(faulty->value("copy"), "CUDA_ERROR_ILLEGAL_ADDRESS") << faulty->text();
  EXPECT_EQ(faulty->value("alloc"), "CUDA_ERROR_ILLEGAL_ADDRESS") << faulty->text();
  EXPECT_EQ(faulty->value("relaunch"), "CUDA_ERROR_ILLEGAL_ADDRESS") << faulty->text();

  // While that context stays faulted, a second process works, and so does this one.
  auto other = client("work");
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->wait_for("work=", std::chrono::seconds(30))) << other->text();
  EXPECT_EQ(other->value("work"), "ok") << other->text();
  EXPECT_EQ(other->wait_exit(std::chrono::seconds(10)), 0) << other->text();

  Module m("elementwise.fatbin");
  ASSERT_TRUE(m.ok());
  const int n = 100;
  auto a = random_vector<float>(n, -1, 1, 51);
  DeviceBuffer<float> da(a), dc(n);
  ASSERT_CU(launch(m.function("vec_add"), {1}, {128}, da.ptr(), da.ptr(), dc.ptr(), n));
  ASSERT_CU(cuCtxSynchronize());
  auto c = dc.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + a[i]) << i;

  faulty->close_stdin();
  EXPECT_EQ(faulty->wait_exit(std::chrono::seconds(10)), 0) << faulty->text();
}

TEST_F(KernelFaults, FailedDeviceAssertIsSticky) {
  auto faulty = client("assert");
  ASSERT_TRUE(faulty);
  ASSERT_TRUE(faulty->wait_for("sync_again=", std::chrono::seconds(30))) << faulty->text();
  EXPECT_EQ(faulty->value("positive"), "CUDA_SUCCESS") << faulty->text();
  EXPECT_EQ(faulty->value("sync"), "CUDA_ERROR_ASSERT") << faulty->text();
  EXPECT_EQ(faulty->value("sync_again"), "CUDA_ERROR_ASSERT") << faulty->text();
  EXPECT_EQ(faulty->wait_exit(std::chrono::seconds(10)), 0) << faulty->text();
  auto other = client("work");
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->wait_for("work=", std::chrono::seconds(30))) << other->text();
  EXPECT_EQ(other->value("work"), "ok") << other->text();
}

// Hand-written PTX: one kernel the interpreter runs, one with cp.async,
// which it does not. The error is not sticky; the context keeps working.
const char* kUnsupportedPtx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry store_seven(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, 7;
  st.global.u32 [%rd2], %r1;
  ret;
}
.visible .entry reduces_multimem(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  mov.f32 %f1, 0f00000000;
  multimem.ld_reduce.relaxed.sys.global.add.f32 %f1, [%rd1];
  ret;
}
)";

TEST_F(KernelFaults, UnsupportedInstructionIsALaunchError) {
  CUcontext own = nullptr;
  ASSERT_CU(cuCtxCreate(&own, nullptr, 0, dev_));
  {
    CUmodule mod = nullptr;
    ASSERT_CU(cuModuleLoadData(&mod, kUnsupportedPtx));
    CUfunction good = nullptr, bad = nullptr;
    ASSERT_CU(cuModuleGetFunction(&good, mod, "store_seven"));
    ASSERT_CU(cuModuleGetFunction(&bad, mod, "reduces_multimem"));
    DeviceBuffer<int> d(4);
    ASSERT_CU(cuMemsetD32(d.ptr(), 0, 4));
    // Launches are asynchronous through rgpu: the error comes from the launch
    // or from the next synchronize.
    CUresult r = launch(bad, {1}, {32}, d.ptr());
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    EXPECT_EQ(r, CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_CU(cuCtxSynchronize());
    EXPECT_CU(launch(good, {1}, {1}, d.ptr()));
    EXPECT_CU(cuCtxSynchronize());
    EXPECT_EQ(d.download()[0], 7);
    EXPECT_CU(cuModuleUnload(mod));
  }
  ASSERT_CU(cuCtxDestroy(own));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
}

// A server of its own with a short kernel watchdog, and a client whose kernel
// never ends.
TEST_F(KernelFaults, EndlessKernelMeetsTheWatchdog) {
  auto server = Child::spawn({std::string(RGPU_BIN_DIR) + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu"},
                             {"RGPU_CPU_DEVICE_MEMORY=512M", "RGPU_CPU_KERNEL_TIMEOUT_MS=500"},
                             {"LD_PRELOAD", "RGPU_SERVER"});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->wait_for("listening on ", std::chrono::seconds(20))) << server->text();
  ASSERT_TRUE(server->wait_for("\n", std::chrono::seconds(5))) << server->text();
  const std::string& t = server->text();
  auto at = t.find("listening on ") + 13;
  std::string address = t.substr(at, t.find_first_of(" \n", at) - at);

  auto spinner = client("spin", {"RGPU_SERVER=" + address});
  ASSERT_TRUE(spinner);
  ASSERT_TRUE(spinner->wait_for("sync_again=", std::chrono::seconds(5)))
      << "no watchdog: the endless kernel was still running after 5 s\n"
      << spinner->text();
  EXPECT_EQ(spinner->value("launch"), "CUDA_SUCCESS") << spinner->text();
  EXPECT_EQ(spinner->value("sync"), "CUDA_ERROR_LAUNCH_TIMEOUT") << spinner->text();
  EXPECT_EQ(spinner->value("sync_again"), "CUDA_ERROR_LAUNCH_TIMEOUT") << spinner->text();
  EXPECT_LT(std::stoll("0" + spinner->value("after_ms")), 4000) << spinner->text();
  EXPECT_EQ(spinner->wait_exit(std::chrono::seconds(10)), 0) << spinner->text();
}

// A server of its own with no watchdog: a client dies while its kernel
// spins. Its session's teardown stops the kernel, and rgpud then stops on
// SIGTERM by itself, cleanly (exit 0), not through its shutdown time limit.
TEST_F(KernelFaults, EndlessKernelOfADeadClientDoesNotKeepTheServer) {
  auto server = Child::spawn({std::string(RGPU_BIN_DIR) + "/rgpud", "--listen", "127.0.0.1:0", "--device", "cpu",
                              "--log-level", "info", "--shutdown-timeout", "30"},
                             {"RGPU_CPU_DEVICE_MEMORY=512M"}, {"LD_PRELOAD", "RGPU_SERVER", "RGPU_CPU_KERNEL_TIMEOUT_MS"});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->wait_for("listening on ", std::chrono::seconds(20))) << server->text();
  ASSERT_TRUE(server->wait_for("\n", std::chrono::seconds(5))) << server->text();
  const std::string& t = server->text();
  auto at = t.find("listening on ") + 13;
  std::string address = t.substr(at, t.find_first_of(" \n", at) - at);

  auto spinner = client("spin", {"RGPU_SERVER=" + address});
  ASSERT_TRUE(spinner);
  ASSERT_TRUE(spinner->wait_for("launch=", std::chrono::seconds(20))) << spinner->text();
  EXPECT_EQ(spinner->value("launch"), "CUDA_SUCCESS") << spinner->text();
  spinner->signal(SIGKILL);
  ASSERT_NE(spinner->wait_exit(std::chrono::seconds(10)), -1);
  server->signal(SIGTERM);
  const int status = server->wait_exit(std::chrono::seconds(25));
  ASSERT_NE(status, -1) << "rgpud still running 25 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace rgpu::e2e
