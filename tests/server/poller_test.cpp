// The device's completion poller on the CPU device: watches finish when their
// events do, in order where asked, one continuation of an owner at a time,
// never after cancel(), on the caller in drain(); and its threads stay fixed
// however many watches wait.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "completions.h"
#include "rgpu/server/driver_table.h"

namespace rgpu::server {
namespace {

using namespace std::chrono_literals;

// Threads of this process now.
size_t process_threads() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Waits (bounded) until `done` holds; false if it never did.
template <class Fn>
bool eventually(Fn done) {
  for (int i = 0; i < 5000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

// A host function that holds its stream until the gate opens.
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> entered{false};
  static void CUDA_CB hold(void* self) {
    auto* gate = static_cast<Gate*>(self);
    gate->entered = true;
    while (!gate->open.load()) std::this_thread::sleep_for(100us);
  }
};

class PollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RGPU_CPU_DEVICE_MEMORY", "64M", 1);
    auto driver = DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    driver_ = driver.value();
    ASSERT_EQ(cu().cuInit(0), CUDA_SUCCESS);
    CUdevice dev;
    ASSERT_EQ(cu().cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(cu().cuCtxCreate(&ctx_, nullptr, 0, dev), CUDA_SUCCESS);
  }
  void TearDown() override {
    gate_.open = true;
    if (ctx_ != nullptr) {
      cu().cuCtxSynchronize();
      cu().cuCtxDestroy(ctx_);
    }
  }
  const DriverTable& cu() const { return *driver_; }

  CUstream stream() {
    CUstream s = nullptr;
    EXPECT_EQ(cu().cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    return s;
  }
  // An event after what `s` holds now; owned by the watch it goes into.
  CUevent after(CUstream s) {
    CUevent e = nullptr;
    EXPECT_EQ(cu().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT_EQ(cu().cuEventRecord(e, s), CUDA_SUCCESS);
    return e;
  }
  void hold(CUstream s) { ASSERT_EQ(cu().cuLaunchHostFunc(s, &Gate::hold, &gate_), CUDA_SUCCESS); }

  Watch watch(uint64_t owner, CUevent e, std::function<void(CUresult)> done, uint64_t order = 0) {
    Watch w;
    w.owner = owner;
    w.order = order;
    w.ctx = ctx_;
    w.events.push_back(e);
    w.done = std::move(done);
    return w;
  }

  std::shared_ptr<const DriverTable> driver_;
  CUcontext ctx_ = nullptr;
  Gate gate_;
};

TEST_F(PollerTest, AWatchFinishesWhenItsWorkDoes) {
  Poller poller(driver_, PollerOptions{});
  CUstream s = stream();
  hold(s);
  std::atomic<int> result{-1};
  poller.add(watch(1, after(s), [&](CUresult r) { result = r; }));
  std::this_thread::sleep_for(20ms);  // the poller has had time to look: the work is held
  EXPECT_EQ(result.load(), -1);
  EXPECT_EQ(poller.pending(), 1u);
  gate_.open = true;
  ASSERT_TRUE(eventually([&] { return result.load() != -1; }));
  EXPECT_EQ(result.load(), CUDA_SUCCESS);
  EXPECT_TRUE(eventually([&] { return poller.pending() == 0; }));
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, WatchesOfOneOrderFinishInTheOrderAdded) {
  Poller poller(driver_, PollerOptions{4});
  CUstream held = stream();
  CUstream free = stream();
  hold(held);
  std::mutex mu;
  std::vector<int> seen;
  auto note = [&](int i) {
    return [&, i](CUresult) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(i);
    };
  };
  // The second's work is done at once, but it waits for the first.
  poller.add(watch(1, after(held), note(1), 7));
  poller.add(watch(1, after(free), note(2), 7));
  // Another order of the same owner is not held up.
  poller.add(watch(1, after(free), note(3), 8));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 1;
  }));
  std::this_thread::sleep_for(20ms);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen, std::vector<int>{3});
  }
  gate_.open = true;
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 3;
  }));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<int>{3, 1, 2}));
  cu().cuStreamDestroy(held);
  cu().cuStreamDestroy(free);
}

TEST_F(PollerTest, AnOwnersContinuationsNeverOverlap) {
  Poller poller(driver_, PollerOptions{4});
  CUstream s = stream();
  std::atomic<int> inside{0}, most{0}, finished{0};
  for (int i = 0; i < 16; ++i) {
    poller.add(watch(1, after(s), [&](CUresult) {
      most = std::max(most.load(), ++inside);
      std::this_thread::sleep_for(1ms);
      --inside;
      ++finished;
    }));
  }
  ASSERT_TRUE(eventually([&] { return finished.load() == 16; }));
  EXPECT_EQ(most.load(), 1);
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, NoContinuationRunsAfterCancel) {
  Poller poller(driver_, PollerOptions{});
  CUstream s = stream();
  hold(s);
  std::atomic<bool> ran{false}, other_ran{false};
  CUevent e = after(s);
  poller.add(watch(1, e, [&](CUresult) { ran = true; }));
  poller.add(watch(2, after(s), [&](CUresult) { other_ran = true; }));
  std::vector<Watch> dropped = poller.cancel(1);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].events, std::vector<CUevent>{e});  // the caller's to keep until the context goes
  gate_.open = true;
  ASSERT_TRUE(eventually([&] { return other_ran.load(); }));
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(poller.pending(), 0u);
  cu().cuEventDestroy(e);
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, CancelWaitsForARunningContinuation) {
  Poller poller(driver_, PollerOptions{});
  CUstream s = stream();
  std::atomic<bool> started{false}, release{false}, finished{false}, cancelled{false};
  poller.add(watch(1, after(s), [&](CUresult) {
    started = true;
    while (!release.load()) std::this_thread::sleep_for(100us);
    finished = true;
  }));
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  std::thread canceller([&] {
    poller.cancel(1);
    cancelled = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(cancelled.load());  // the continuation still runs: cancel cannot be over
  release = true;
  canceller.join();
  EXPECT_TRUE(finished.load());
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, DrainFinishesAContextsWatchesOnTheCaller) {
  // The poller's one thread is held by another owner's continuation, so only
  // drain() can finish owner 1's watch.
  Poller poller(driver_, PollerOptions{1});
  CUstream s = stream();
  std::atomic<bool> busy{false}, release{false};
  poller.add(watch(2, after(s), [&](CUresult) {
    busy = true;
    while (!release.load()) std::this_thread::sleep_for(100us);
  }));
  ASSERT_TRUE(eventually([&] { return busy.load(); }));
  std::thread::id where;
  std::atomic<int> result{-1};
  poller.add(watch(1, after(s), [&](CUresult r) {
    where = std::this_thread::get_id();
    result = r;
  }));
  ASSERT_EQ(cu().cuCtxSynchronize(), CUDA_SUCCESS);
  poller.drain(1, ctx_);
  EXPECT_EQ(result.load(), CUDA_SUCCESS);
  EXPECT_EQ(where, std::this_thread::get_id());
  release = true;
  EXPECT_TRUE(eventually([&] { return poller.pending() == 0; }));
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, AForgottenClientEventEndsItsWatch) {
  Poller poller(driver_, PollerOptions{});
  CUstream s = stream();
  hold(s);
  CUevent client = after(s);
  std::atomic<int> result{-1};
  Watch w;
  w.owner = 1;
  w.ctx = ctx_;
  w.client_event = client;
  w.done = [&](CUresult r) { result = r; };
  poller.add(std::move(w));
  poller.forget(1, client);
  ASSERT_EQ(cu().cuEventDestroy(client), CUDA_SUCCESS);
  ASSERT_TRUE(eventually([&] { return result.load() != -1; }));
  EXPECT_EQ(result.load(), CUDA_ERROR_INVALID_HANDLE);
  gate_.open = true;
  cu().cuStreamDestroy(s);
}

TEST_F(PollerTest, ThreadsStayFixedHoweverManyWatchesWait) {
  Poller poller(driver_, PollerOptions{2});
  EXPECT_EQ(poller.threads(), 2u);
  CUstream s = stream();
  hold(s);
  ASSERT_TRUE(eventually([&] { return gate_.entered.load(); }));  // its host thread is up
  const size_t before = process_threads();
  std::atomic<int> finished{0};
  for (uint64_t owner = 1; owner <= 64; ++owner) {
    for (int i = 0; i < 4; ++i) poller.add(watch(owner, after(s), [&](CUresult) { ++finished; }, i % 2 + 1));
  }
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(process_threads(), before);
  gate_.open = true;
  ASSERT_TRUE(eventually([&] { return finished.load() == 256; }));
  EXPECT_EQ(process_threads(), before);
  cu().cuStreamDestroy(s);
}

}  // namespace
}  // namespace rgpu::server
