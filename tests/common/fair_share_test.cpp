// FairShare with a fake clock: members that keep a simulated device busy get
// kernel time in the ratio of their shares; a member alone is never held
// back; an idle member does not bank time.
#include "rgpu/common/fair_share.h"

#include <gtest/gtest.h>

namespace rgpu {
namespace {

constexpr int64_t kMs = 1'000'000;

// A device that runs one launch at a time, each `launch_ns` of kernel time,
// for whichever member's turn it is (the first that may go, in a rotating
// order); members whose delay() is not 0 wait. Returns each member's
// launches.
std::vector<int> simulate(FairShare& fair, int64_t* now, const std::vector<uint64_t>& ids, int64_t launch_ns,
                          int64_t until_ns) {
  std::vector<int> launches(ids.size(), 0);
  size_t next = 0;
  while (*now < until_ns) {
    bool ran = false;
    for (size_t k = 0; k < ids.size() && !ran; ++k) {
      const size_t i = (next + k) % ids.size();
      if (fair.delay(ids[i]) != 0) continue;
      fair.start(ids[i]);
      *now += launch_ns;
      fair.charge(ids[i], launch_ns);
      ++launches[i];
      next = i + 1;
      ran = true;
    }
    if (!ran) *now += kMs;  // everyone waits: time passes
  }
  return launches;
}

TEST(FairShare, BusyMembersGetKernelTimeInTheRatioOfTheirShares) {
  int64_t now = 0;
  FairShare fair([&] { return now; });
  const uint64_t fast = fair.add(0.75), slow = fair.add(0.25);
  auto launches = simulate(fair, &now, {fast, slow}, 2 * kMs, 10'000 * kMs);
  ASSERT_GT(launches[1], 100);
  const double ratio = static_cast<double>(launches[0]) / launches[1];
  EXPECT_NEAR(ratio, 3.0, 0.05) << launches[0] << " to " << launches[1];
  EXPECT_NEAR(static_cast<double>(fair.kernel_time(fast)) / fair.kernel_time(slow), 3.0, 0.05);
}

TEST(FairShare, ThreeMembersWithUnequalLaunches) {
  int64_t now = 0;
  FairShare fair([&] { return now; });
  const uint64_t a = fair.add(0.5), b = fair.add(0.25), c = fair.add(0.25);
  auto launches = simulate(fair, &now, {a, b, c}, kMs, 20'000 * kMs);
  EXPECT_NEAR(static_cast<double>(launches[0]) / launches[1], 2.0, 0.05);
  EXPECT_NEAR(static_cast<double>(launches[1]) / launches[2], 1.0, 0.05);
}

TEST(FairShare, AMemberAloneIsNeverHeldBack) {
  int64_t now = 0;
  FairShare fair([&] { return now; });
  const uint64_t slow = fair.add(0.1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(fair.delay(slow), 0);
    fair.start(slow);
    now += 10 * kMs;
    fair.charge(slow, 10 * kMs);
  }
}

TEST(FairShare, AMemberAheadWaitsAboutAsLongAsItIsAhead) {
  int64_t now = 0;
  FairShare::Options options;
  options.slack_ns = 0;
  FairShare fair([&] { return now; }, options);
  const uint64_t a = fair.add(0.5), b = fair.add(0.5);
  EXPECT_EQ(fair.delay(a), 0);
  EXPECT_EQ(fair.delay(b), 0);
  fair.charge(a, 10 * kMs);  // 20 ms of virtual time ahead of b
  EXPECT_EQ(fair.delay(a), 20 * kMs);
  fair.charge(b, 10 * kMs);
  EXPECT_EQ(fair.delay(a), 0);
}

TEST(FairShare, ALongLaunchKeepsItsMemberActive) {
  int64_t now = 0;
  FairShare fair([&] { return now; });
  const uint64_t fast = fair.add(0.75), slow = fair.add(0.25);
  ASSERT_EQ(fair.delay(slow), 0);
  fair.start(slow);  // a launch far longer than the idle time
  ASSERT_EQ(fair.delay(fast), 0);
  fair.start(fast);
  now += 100 * kMs;
  fair.charge(fast, 100 * kMs);
  now += 5000 * kMs;
  EXPECT_GT(fair.delay(fast), 0) << "the slow one still runs: the fast one waits for it";
  fair.charge(slow, 400 * kMs);  // 1600 ms of virtual time, past fast's 133
  EXPECT_EQ(fair.delay(fast), 0);
}

TEST(FairShare, IdleTimeIsNotBanked) {
  int64_t now = 0;
  FairShare fair([&] { return now; });
  const uint64_t busy = fair.add(0.5), late = fair.add(0.5);
  // `busy` runs alone for a long time.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(fair.delay(busy), 0);
    fair.start(busy);
    now += kMs;
    fair.charge(busy, kMs);
  }
  // `late` joins at busy's virtual time, not at 0: from then on they
  // alternate instead of `late` running alone for a second.
  auto launches = simulate(fair, &now, {busy, late}, kMs, now + 200 * kMs);
  EXPECT_NEAR(launches[0], launches[1], 6);
  // A member that leaves no longer holds anyone back.
  fair.charge(late, 1000 * kMs);
  fair.remove(busy);
  EXPECT_EQ(fair.delay(late), 0);
}

}  // namespace
}  // namespace rgpu
