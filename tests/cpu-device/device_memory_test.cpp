// Unit tests of DeviceMemory, the range checks the kernel interpreter uses.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "rgpu/cpudev/memory.h"

namespace rgpu::cpudev {
namespace {

TEST(DeviceMemory, CheckAcceptsOnlyRangesInsideOneLiveAllocation) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  auto a = mem.allocate(100, 1);
  auto b = mem.allocate(5000, 1);
  ASSERT_TRUE(a.is_ok());
  ASSERT_TRUE(b.is_ok());
  uint64_t pa = *a, pb = *b;
  EXPECT_TRUE(mem.check(pa, 100));
  EXPECT_TRUE(mem.check(pa + 99, 1));
  EXPECT_TRUE(mem.check(pa + 100, 0) == false);  // one past the end is outside
  EXPECT_FALSE(mem.check(pa, 101));              // the page is mapped, but past the allocation
  EXPECT_FALSE(mem.check(pa + 50, UINT64_MAX));
  EXPECT_FALSE(mem.check(UINT64_MAX, 2));
  EXPECT_FALSE(mem.check(0, 1));
  EXPECT_FALSE(mem.check(pa - 1, 2));
  EXPECT_TRUE(mem.check(pb + 4999, 1));
  EXPECT_FALSE(mem.check(pa, pb - pa + 10));  // spans two allocations
  EXPECT_TRUE(mem.in_range(pa));
  // The virtual area (cuMemAddressReserve) follows the capacity.
  EXPECT_TRUE(mem.in_range(mem.base() + mem.capacity()));
  EXPECT_FALSE(mem.check(mem.base() + mem.capacity(), 1));
  EXPECT_FALSE(mem.in_range(mem.base() + mem.capacity() * (1 + DeviceMemory::kVirtualFactor) + 4096));
  auto f = mem.find(pb + 10);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(pb, f->base);
  EXPECT_EQ(5000u, f->size);
  EXPECT_TRUE(mem.release(pa).is_ok());
  EXPECT_FALSE(mem.check(pa, 1));
  EXPECT_EQ(ErrorKind::kInvalidArgument, mem.release(pa).kind());
  EXPECT_EQ(ErrorKind::kInvalidArgument, mem.release(pb + 1).kind());
  EXPECT_EQ(1u, mem.live_count());
}

TEST(DeviceMemory, GroupsRestrictChecksAndFrees) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  uint64_t a = *mem.allocate(64, 1, 7);
  uint64_t b = *mem.allocate(64, 2, 8);
  EXPECT_TRUE(mem.check(a, 64, 7));
  EXPECT_FALSE(mem.check(a, 64, 8));
  EXPECT_FALSE(mem.check(a, 1, 0));
  EXPECT_TRUE(mem.check(a, 64));  // kAnyGroup
  EXPECT_TRUE(mem.check(b, 8, 8));
  EXPECT_EQ(8u, mem.find(b)->group);
  EXPECT_EQ(ErrorKind::kInvalidArgument, mem.release(b, 7).kind());
  EXPECT_TRUE(mem.check(b, 8, 8));  // still live
  EXPECT_TRUE(mem.release(b, 8).is_ok());
  EXPECT_TRUE(mem.release(a).is_ok());
  EXPECT_EQ(ErrorKind::kInvalidArgument, mem.allocate(64, 1, kAnyGroup).status().kind());
}

TEST(DeviceMemory, CachedChecksGiveTheSameAnswers) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  uint64_t a = *mem.allocate(100, 1, 3);
  uint64_t b = *mem.allocate(100, 2, 4);
  DeviceMemory::CheckCache cache;
  EXPECT_TRUE(mem.check(a + 10, 4, 3, &cache));
  EXPECT_EQ(a, cache.lo[0]);
  EXPECT_TRUE(mem.check(a + 96, 4, 3, &cache));    // a hit
  EXPECT_FALSE(mem.check(a + 97, 4, 3, &cache));   // past the end
  EXPECT_FALSE(mem.check(a + 10, 4, 4, &cache));   // another group
  EXPECT_FALSE(mem.check(b, 4, 3, &cache));        // another group's allocation
  EXPECT_TRUE(mem.check(a, 100, 3, &cache));
  // Freeing any allocation invalidates the cache: the freed one fails at once.
  EXPECT_TRUE(mem.release(a).is_ok());
  EXPECT_FALSE(mem.check(a + 10, 4, 3, &cache));
  EXPECT_TRUE(mem.check(b + 10, 4, 4, &cache));
  mem.release_owner(2);
  EXPECT_FALSE(mem.check(b + 10, 4, 4, &cache));
}

// What compiled kernels cache per instruction: the allocation around an
// access, valid while the release counter reads what check_extent saw.
TEST(DeviceMemory, ExtentsNameTheAllocationAndEveryReleaseEndsThem) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  uint64_t a = *mem.allocate(100, 1, 3);
  uint64_t b = *mem.allocate(100, 2, 4);
  uint64_t lo = 0, hi = 0, seen = 0;
  ASSERT_TRUE(mem.check_extent(a + 10, 4, 3, &lo, &hi, &seen));
  EXPECT_EQ(a, lo);
  EXPECT_EQ(a + 100, hi);
  EXPECT_EQ(seen, mem.releases().load());
  EXPECT_FALSE(mem.check_extent(a + 97, 4, 3, &lo, &hi, &seen));  // past the end
  EXPECT_FALSE(mem.check_extent(a + 10, 4, 4, &lo, &hi, &seen));  // another group
  EXPECT_FALSE(mem.check_extent(b, 4, 3, &lo, &hi, &seen));       // another group's allocation
  ASSERT_TRUE(mem.check_extent(b, 4, 4, &lo, &hi, &seen));
  // Freeing anything (here b) changes the counter: every cached extent,
  // a's included, must be checked again.
  EXPECT_TRUE(mem.release(b).is_ok());
  EXPECT_NE(seen, mem.releases().load());
  EXPECT_FALSE(mem.check_extent(b, 4, 4, &lo, &hi, &seen));
  EXPECT_TRUE(mem.check_extent(a, 100, 3, &lo, &hi, &seen));
  EXPECT_EQ(seen, mem.releases().load());
}

TEST(DeviceMemory, PinDefersReclaimOfFreedPages) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  uint64_t full = mem.free_bytes();
  uint64_t p = *mem.allocate(8192, 1);
  auto* bytes = reinterpret_cast<volatile unsigned char*>(p);
  bytes[0] = 42;
  {
    DeviceMemory::Pin pin = mem.pin();
    ASSERT_TRUE(mem.check(p, 1));
    EXPECT_TRUE(mem.release(p).is_ok());
    EXPECT_FALSE(mem.check(p, 1));  // new checks fail at once
    EXPECT_EQ(42, bytes[0]);        // but the pinned reader can still touch it
    EXPECT_LT(mem.free_bytes(), full);
  }
  EXPECT_EQ(full, mem.free_bytes());
  EXPECT_EQ(0u, mem.live_count());
}

TEST(DeviceMemory, ReleaseOwnerFreesOnlyThatOwner) {
  auto m = DeviceMemory::create(1 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  uint64_t a = *mem.allocate(10, 7);
  uint64_t b = *mem.allocate(10, 8);
  uint64_t c = *mem.allocate(10, 7);
  EXPECT_EQ(2u, mem.release_owner(7));
  EXPECT_FALSE(mem.check(a, 1));
  EXPECT_TRUE(mem.check(b, 1));
  EXPECT_FALSE(mem.check(c, 1));
}

TEST(DeviceMemory, ConcurrentChecksAndAllocations) {
  auto m = DeviceMemory::create(16 << 20);
  ASSERT_TRUE(m.is_ok());
  DeviceMemory& mem = *m.value();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        auto r = mem.allocate(64 + i, static_cast<uint64_t>(t));
        if (!r) {
          ++bad;
          continue;
        }
        DeviceMemory::Pin pin = mem.pin();
        if (!mem.check(*r, 64 + i) || mem.check(*r, 65 + i)) ++bad;
        reinterpret_cast<volatile char*>(*r)[63 + i] = 1;
        if (!mem.release(*r).is_ok()) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(0, bad.load());
  EXPECT_EQ(mem.capacity(), mem.free_bytes());
}

TEST(DeviceMemory, RejectsBadSizes) {
  EXPECT_FALSE(DeviceMemory::create(0).is_ok());
  auto m = DeviceMemory::create(1 << 16);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(ErrorKind::kInvalidArgument, m.value()->allocate(0, 1).status().kind());
  EXPECT_EQ(ErrorKind::kOverloaded, m.value()->allocate((1 << 16) + 1, 1).status().kind());
  EXPECT_EQ(ErrorKind::kOverloaded, m.value()->allocate(UINT64_MAX, 1).status().kind());
}

}  // namespace
}  // namespace rgpu::cpudev
