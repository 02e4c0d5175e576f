// The device router's pure parts (client-shim/src/route.h): which server a
// handle or a device pointer belongs to, and the server list.
#include "route.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

using rgpu::protocol::HandleKind;
namespace protocol = rgpu::protocol;
namespace route = rgpu::shim::route;
using Range = route::AllocationTable::Range;

// Server tags themselves: tests/protocol/handles_test.cpp.
TEST(RouteHandles, ServerZeroPrimaryContextIsTheServersOwnValue) {
  EXPECT_EQ(route::primary_context(0, 3), protocol::primary_context(3));
  EXPECT_EQ(route::wire_context(protocol::primary_context(3)), protocol::primary_context(3));
}

TEST(RouteHandles, PrimaryContextsAreDistinctOnTheClientAndUntaggedOnTheWire) {
  // Device 0 of server 0 and device 0 of server 1: one wire value, two program values.
  const uint64_t first = route::primary_context(0, 0), second = route::primary_context(1, 0);
  EXPECT_NE(first, second);
  EXPECT_EQ(protocol::server_of(second), 1u);
  EXPECT_FALSE(protocol::is_primary_context(second)) << "tagged: not a server's primary context value";
  EXPECT_EQ(route::wire_context(second), protocol::primary_context(0));
  EXPECT_EQ(route::wire_context(first), protocol::primary_context(0));
  // A minted context travels as it is: the server knows it by that value.
  const uint64_t minted = protocol::with_server(protocol::make_handle(HandleKind::kContext, 0x900), 2);
  EXPECT_EQ(route::wire_context(minted), minted);
}

TEST(AllocationTable, FindsTheServerOfAnyAddressInsideAnAllocation) {
  route::AllocationTable t;
  EXPECT_FALSE(t.add(Range{0x1000, 0x100, 0, 11}));
  EXPECT_FALSE(t.add(Range{0x2000, 0x1000, 1, 22}));
  EXPECT_FALSE(t.find(0xfff));
  ASSERT_TRUE(t.find(0x1000));
  EXPECT_EQ(t.find(0x10ff)->server, 0u);
  EXPECT_FALSE(t.find(0x1100));
  EXPECT_EQ(t.find(0x2000)->server, 1u);
  EXPECT_EQ(t.find(0x2fff)->ctx, 22u);
  EXPECT_FALSE(t.find(0x3000));
  EXPECT_TRUE(t.remove(0x2000));
  EXPECT_FALSE(t.remove(0x2000));
  EXPECT_FALSE(t.find(0x2800));
}

TEST(AllocationTable, RefusesARangeOverlappingAnotherServersAllocation) {
  route::AllocationTable t;
  ASSERT_FALSE(t.add(Range{0x10000, 0x1000, 0, 1}));
  // Overlapping at the start, at the end, inside and around: all refused, and nothing added.
  for (const Range& r : {Range{0xf800, 0x1000, 1, 2}, Range{0x10fff, 0x10, 1, 2}, Range{0x10100, 0x10, 1, 2},
                         Range{0x8000, 0x10000, 1, 2}}) {
    auto clash = t.add(r);
    ASSERT_TRUE(clash) << std::hex << r.base;
    EXPECT_EQ(clash->server, 0u);
    EXPECT_EQ(clash->base, 0x10000u);
  }
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find(0x10800)->server, 0u);
  // Touching is not overlapping.
  EXPECT_FALSE(t.add(Range{0x11000, 0x1000, 1, 2}));
  EXPECT_FALSE(t.add(Range{0xf000, 0x1000, 1, 2}));
  EXPECT_EQ(t.size(), 3u);
}

TEST(AllocationTable, ASameServerOverlapReplacesWhatThatServerFreedUnseen) {
  route::AllocationTable t;
  ASSERT_FALSE(t.add(Range{0x1000, 0x1000, 0, 1}));
  ASSERT_FALSE(t.add(Range{0x2000, 0x1000, 0, 1}));
  EXPECT_FALSE(t.add(Range{0x1800, 0x1000, 0, 3}));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find(0x1900)->ctx, 3u);
  EXPECT_FALSE(t.find(0x1000));
}

TEST(AllocationTable, ConcurrentAddsAndLookupsStayConsistent) {
  route::AllocationTable t;
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s) {
    threads.emplace_back([&t, s] {
      for (uint64_t i = 0; i < 500; ++i) {
        const uint64_t base = (static_cast<uint64_t>(s) << 32) + i * 0x1000;
        EXPECT_FALSE(t.add(Range{base, 0x1000, static_cast<size_t>(s), 0}));
        auto r = t.find(base + 0x10);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->server, static_cast<size_t>(s));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 2000u);
}

TEST(ServerList, ParsesCommaSeparatedAddresses) {
  std::string problem;
  auto one = route::parse_servers("127.0.0.1:5000", &problem);
  ASSERT_TRUE(one);
  EXPECT_EQ(*one, std::vector<std::string>{"127.0.0.1:5000"});
  auto two = route::parse_servers(" a:1 , b:2", &problem);
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(ServerList, RefusesEmptyEntriesAndTooManyServers) {
  std::string problem;
  EXPECT_FALSE(route::parse_servers("a:1,,b:2", &problem));
  EXPECT_NE(problem.find("empty"), std::string::npos);
  EXPECT_FALSE(route::parse_servers("a:1,", &problem));
  EXPECT_FALSE(route::parse_servers("", &problem));
  std::string many;
  for (size_t i = 0; i <= protocol::kMaxServers; ++i) many += (i ? "," : "") + std::string("h:1");
  problem.clear();
  EXPECT_FALSE(route::parse_servers(many, &problem));
  EXPECT_NE(problem.find("at most"), std::string::npos);
}

}  // namespace
