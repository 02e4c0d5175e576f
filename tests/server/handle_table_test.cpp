// The session's handle table and ledger on their own: parents and release
// order, kinds, the limit, forged handles, per-context ranges.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "handle_table.h"
#include "ledger.h"

namespace rgpu::server {
namespace {

using protocol::HandleKind;

uint64_t minted(HandleKind kind, uint64_t n) { return protocol::make_handle(kind, protocol::kFirstMintedSerial + n); }

// A table whose destroy functions write down what they released, in order.
struct Recorder {
  std::vector<std::string> released;
  HandleTable::Destroy as(std::string name) {
    return [this, name](void*) { released.push_back(name); };
  }
};

int g_object;  // any non-null object

TEST(HandleTableTest, RemovingAContextReleasesItsSubtreeChildrenFirst) {
  HandleTable table(100);
  Recorder r;
  const uint64_t ctx = minted(HandleKind::kContext, 1), stream = minted(HandleKind::kStream, 1),
                 event = minted(HandleKind::kEvent, 1), module = minted(HandleKind::kModule, 1),
                 function = minted(HandleKind::kFunction, 1);
  ASSERT_EQ(table.add(HandleKind::kContext, ctx, &g_object, 0, r.as("ctx")), HandleTable::AddResult::kAdded);
  ASSERT_EQ(table.add(HandleKind::kStream, stream, &g_object, ctx, r.as("stream")), HandleTable::AddResult::kAdded);
  ASSERT_EQ(table.add(HandleKind::kModule, module, &g_object, ctx, r.as("module")), HandleTable::AddResult::kAdded);
  ASSERT_EQ(table.add(HandleKind::kFunction, function, &g_object, module, r.as("function")),
            HandleTable::AddResult::kAdded);
  ASSERT_EQ(table.add(HandleKind::kEvent, event, &g_object, ctx, r.as("event")), HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.size(), 5u);
  EXPECT_EQ(table.parent(HandleKind::kFunction, function), module);
  EXPECT_EQ(table.children(ctx, HandleKind::kStream), std::vector<uint64_t>{stream});

  EXPECT_TRUE(table.remove(HandleKind::kContext, ctx));
  // Newest first, a module's functions before the module, the context last.
  EXPECT_EQ(r.released, (std::vector<std::string>{"event", "function", "module", "stream", "ctx"}));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(HandleKind::kStream, stream), nullptr);
  EXPECT_FALSE(table.remove(HandleKind::kFunction, function));
}

TEST(HandleTableTest, UnloadingAModuleReleasesOnlyItsFunctions) {
  HandleTable table(100);
  Recorder r;
  const uint64_t ctx = minted(HandleKind::kContext, 1), a = minted(HandleKind::kModule, 1),
                 b = minted(HandleKind::kModule, 2);
  table.add(HandleKind::kContext, ctx, &g_object, 0, r.as("ctx"));
  table.add(HandleKind::kModule, a, &g_object, ctx, r.as("a"));
  table.add(HandleKind::kModule, b, &g_object, ctx, r.as("b"));
  table.add(HandleKind::kFunction, minted(HandleKind::kFunction, 1), &g_object, a, r.as("a.f"));
  table.add(HandleKind::kFunction, minted(HandleKind::kFunction, 2), &g_object, b, r.as("b.f"));
  EXPECT_TRUE(table.remove(HandleKind::kModule, a));
  EXPECT_EQ(r.released, (std::vector<std::string>{"a.f", "a"}));
  EXPECT_NE(table.find(HandleKind::kFunction, minted(HandleKind::kFunction, 2)), nullptr);
  // The context no longer lists the module: removing it releases the rest once.
  table.clear();
  EXPECT_EQ(r.released, (std::vector<std::string>{"a.f", "a", "b.f", "b", "ctx"}));
}

TEST(HandleTableTest, KindsAreChecked) {
  HandleTable table(100);
  const uint64_t ctx = minted(HandleKind::kContext, 1), stream = minted(HandleKind::kStream, 1);
  table.add(HandleKind::kContext, ctx, &g_object, 0, nullptr);
  // A stream handle registered as an event, an event under a stream, a
  // function under a context, a stream with no parent: all refused.
  EXPECT_EQ(table.add(HandleKind::kEvent, stream, &g_object, ctx, nullptr), HandleTable::AddResult::kInvalid);
  ASSERT_EQ(table.add(HandleKind::kStream, stream, &g_object, ctx, nullptr), HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.add(HandleKind::kEvent, minted(HandleKind::kEvent, 1), &g_object, stream, nullptr),
            HandleTable::AddResult::kInvalid);
  EXPECT_EQ(table.add(HandleKind::kFunction, minted(HandleKind::kFunction, 1), &g_object, ctx, nullptr),
            HandleTable::AddResult::kInvalid);
  EXPECT_EQ(table.add(HandleKind::kStream, minted(HandleKind::kStream, 2), &g_object, 0, nullptr),
            HandleTable::AddResult::kInvalid);
  // Looked up as another kind, a live handle is not there.
  EXPECT_NE(table.find(HandleKind::kStream, stream), nullptr);
  EXPECT_EQ(table.find(HandleKind::kEvent, stream), nullptr);
  EXPECT_FALSE(table.remove(HandleKind::kEvent, stream));
  EXPECT_NE(table.find(HandleKind::kStream, stream), nullptr);
}

TEST(HandleTableTest, ForgedSpecialAndDuplicateHandlesAreRefused) {
  HandleTable table(100);
  const uint64_t ctx = minted(HandleKind::kContext, 1);
  ASSERT_EQ(table.add(HandleKind::kContext, ctx, &g_object, 0, nullptr), HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.add(HandleKind::kContext, ctx, &g_object, 0, nullptr), HandleTable::AddResult::kInvalid);
  // Special values are never registered: no handle, the special streams, a
  // reserved serial, a handle without a kind.
  EXPECT_EQ(table.add(HandleKind::kStream, 0, &g_object, ctx, nullptr), HandleTable::AddResult::kInvalid);
  for (uint64_t special : {protocol::kNullStream, protocol::kLegacyStream, protocol::kPerThreadStream}) {
    EXPECT_EQ(table.add(HandleKind::kStream, special, &g_object, ctx, nullptr), HandleTable::AddResult::kInvalid);
  }
  EXPECT_EQ(table.add(HandleKind::kEvent, protocol::make_handle(HandleKind::kEvent, 0x80), &g_object, ctx, nullptr),
            HandleTable::AddResult::kInvalid);
  EXPECT_EQ(table.add(HandleKind::kStream, 0x1234, &g_object, ctx, nullptr), HandleTable::AddResult::kInvalid);
  // A primary context is the one reserved handle a client may name.
  EXPECT_EQ(table.add(HandleKind::kContext, protocol::primary_context(0), &g_object, 0, nullptr),
            HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.add(HandleKind::kStream, protocol::primary_context(1), &g_object, ctx, nullptr),
            HandleTable::AddResult::kInvalid);
  // Unknown handles are not found.
  EXPECT_EQ(table.find(HandleKind::kStream, minted(HandleKind::kStream, 77)), nullptr);
  EXPECT_FALSE(table.remove(HandleKind::kStream, minted(HandleKind::kStream, 77)));
}

TEST(HandleTableTest, TheLimitHoldsAndRemovingMakesRoom) {
  HandleTable table(3);
  const uint64_t ctx = minted(HandleKind::kContext, 1);
  table.add(HandleKind::kContext, ctx, &g_object, 0, nullptr);
  EXPECT_EQ(table.add(HandleKind::kEvent, minted(HandleKind::kEvent, 1), &g_object, ctx, nullptr),
            HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.add(HandleKind::kEvent, minted(HandleKind::kEvent, 2), &g_object, ctx, nullptr),
            HandleTable::AddResult::kAdded);
  EXPECT_EQ(table.add(HandleKind::kEvent, minted(HandleKind::kEvent, 3), &g_object, ctx, nullptr),
            HandleTable::AddResult::kFull);
  EXPECT_EQ(table.find(HandleKind::kEvent, minted(HandleKind::kEvent, 3)), nullptr);
  EXPECT_TRUE(table.remove(HandleKind::kEvent, minted(HandleKind::kEvent, 1)));
  EXPECT_EQ(table.add(HandleKind::kEvent, minted(HandleKind::kEvent, 3), &g_object, ctx, nullptr),
            HandleTable::AddResult::kAdded);
}

TEST(LedgerTest, RangesAreCheckedAgainstTheOwningContext) {
  Ledger ledger;
  const uint64_t a = minted(HandleKind::kContext, 1), b = minted(HandleKind::kContext, 2);
  ASSERT_TRUE(ledger.add(a, 0x10000, 0x1000));
  ASSERT_TRUE(ledger.add(b, 0x20000, 0x1000));
  EXPECT_TRUE(ledger.check(a, 0x10000, 0x1000));
  EXPECT_TRUE(ledger.check(a, 0x10fff, 1));
  EXPECT_TRUE(ledger.check(a, 0x10800, 0));
  EXPECT_FALSE(ledger.check(a, 0x10000, 0x1001));              // past the end
  EXPECT_FALSE(ledger.check(a, 0x10800, ~uint64_t{0}));        // wraps
  EXPECT_FALSE(ledger.check(a, 0x11000, 0));                   // just past it
  EXPECT_FALSE(ledger.check(a, 0x20000, 16));                  // the other context's
  EXPECT_TRUE(ledger.check(b, 0x20000, 16));
  EXPECT_FALSE(ledger.add(a, 0x10800, 16));                    // overlaps
  auto r = ledger.find(0x20010);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->base, 0x20000u);
  EXPECT_EQ(r->ctx, b);
  EXPECT_EQ(ledger.bytes_held(), 0x2000u);
}

TEST(LedgerTest, ContextsAndModulesDropTheirRanges) {
  Ledger ledger;
  const uint64_t a = minted(HandleKind::kContext, 1), m = minted(HandleKind::kModule, 1);
  ledger.add(a, 0x10000, 0x100);
  ledger.add(a, 0x30000, 0x40, m);  // a module global: not freeable, not counted
  EXPECT_EQ(ledger.bytes_held(), 0x100u);
  EXPECT_FALSE(ledger.remove_allocation(a, 0x30000));
  EXPECT_TRUE(ledger.check(a, 0x30000, 0x40));
  ledger.drop_module(m);
  EXPECT_FALSE(ledger.check(a, 0x30000, 1));
  EXPECT_TRUE(ledger.check(a, 0x10000, 0x100));
  ledger.drop_context(a);
  EXPECT_FALSE(ledger.check(a, 0x10000, 1));
  EXPECT_EQ(ledger.bytes_held(), 0u);
}

TEST(LedgerTest, QuotasArePerDeviceAndCountModuleImages) {
  Ledger ledger({0x1000, 0});  // device 0: 4 KiB; device 1: no limit
  const uint64_t a = minted(HandleKind::kContext, 1), b = minted(HandleKind::kContext, 2);
  const uint64_t m = minted(HandleKind::kModule, 1), n = minted(HandleKind::kModule, 2);
  ledger.bind_context(a, 0);
  ledger.bind_context(b, 1);
  EXPECT_EQ(ledger.quota(0), 0x1000u);
  EXPECT_EQ(ledger.quota(1), 0u);
  EXPECT_EQ(ledger.quota(7), 0u);
  ASSERT_TRUE(ledger.charge_module(a, m, 0x400));  // an image counts against device 0
  EXPECT_FALSE(ledger.charge_module(a, m, 1)) << "counted once";
  EXPECT_TRUE(ledger.fits(a, 0xc00));
  EXPECT_FALSE(ledger.fits(a, 0xc01));
  EXPECT_FALSE(ledger.charge_module(a, n, 0xc01));
  EXPECT_TRUE(ledger.fits(b, uint64_t{1} << 40)) << "device 1 has no limit";
  ASSERT_TRUE(ledger.add(a, 0x10000, 0xc00));
  EXPECT_FALSE(ledger.fits(a, 1));
  EXPECT_EQ(ledger.bytes_held_by(a), 0x1000u);
  ledger.drop_module(m);  // unloading frees the image's bytes
  EXPECT_EQ(ledger.bytes_held_by(a), 0xc00u);
  EXPECT_TRUE(ledger.fits(a, 0x400));
  EXPECT_FALSE(ledger.fits(a, 0x401));
}

}  // namespace
}  // namespace rgpu::server
