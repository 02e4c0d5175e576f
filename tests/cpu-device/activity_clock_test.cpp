// The CPU device's ActivityClock on its own, on a clock the test sets:
// overlapping activities count once, the sample period is the last second
// (the bucket in progress and the 7 before it), and shares stay in 0..100.
#include "activity.h"

#include <gtest/gtest.h>

namespace rgpu::cpudev {
namespace {

constexpr uint64_t kMs = 1000;

TEST(ActivityClock, IdleIsZero) {
  ActivityClock clock;
  EXPECT_EQ(0u, clock.percent(5000 * kMs));
}

TEST(ActivityClock, OverlappingActivitiesCountOnce) {
  ActivityClock clock;
  clock.begin(1000 * kMs);
  clock.begin(1200 * kMs);
  clock.end(1500 * kMs);
  clock.end(1600 * kMs);
  // At 2 s the period is [1.125 s, 2 s): busy from 1.125 s to 1.6 s.
  EXPECT_EQ(475u * 100 / 875, clock.percent(2000 * kMs));
  // A second later the interval is out of the period.
  EXPECT_EQ(0u, clock.percent(3000 * kMs));
}

TEST(ActivityClock, RunningActivityCountsUpToNow) {
  ActivityClock clock;
  clock.begin(3500 * kMs);
  EXPECT_EQ(500u * 100 / 875, clock.percent(4000 * kMs));
  // Busy for longer than the period: all of it, never more.
  EXPECT_EQ(100u, clock.percent(9000 * kMs));
  clock.end(9000 * kMs);
  EXPECT_EQ(100u, clock.percent(9000 * kMs));
  EXPECT_EQ(0u, clock.percent(11000 * kMs));
}

TEST(ActivityClock, StaleBucketsAreRestarted) {
  ActivityClock clock;
  clock.begin(0);
  clock.end(1000 * kMs);  // fills every bucket of the first second
  clock.begin(10'000 * kMs);
  clock.end(10'100 * kMs);  // the same slots, eight seconds later
  // The period is [10 s, 10.9 s): only the 100 ms of the recent interval,
  // not the stale 125 ms per slot.
  EXPECT_EQ(100u * 100 / 900, clock.percent(10'900 * kMs));
}

}  // namespace
}  // namespace rgpu::cpudev
