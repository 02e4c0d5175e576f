// ThreadSet joins finished jobs as it goes and waits for the rest at the end.
#include "rgpu/common/thread_set.h"

#include <gtest/gtest.h>

#include <chrono>

namespace rgpu {
namespace {

TEST(ThreadSet, FinishedJobsAreReapedOnTheNextSpawn) {
  ThreadSet set;
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    set.spawn([&] { ran.fetch_add(1); });
    // Let the job finish so the next spawn can reap it.
    for (int spin = 0; spin < 1000 && ran.load() <= i; ++spin) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  set.spawn([] {});
  EXPECT_LE(set.size(), 3u);
  set.join_all();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_EQ(ran.load(), 50);
}

TEST(ThreadSet, JoinAllWaitsForRunningJobs) {
  std::atomic<bool> finished{false};
  {
    ThreadSet set;
    set.spawn([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
  }  // destructor joins
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace rgpu
