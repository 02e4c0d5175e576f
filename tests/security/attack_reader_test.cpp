// Clients that stop reading their results (docs/security.md, "Slow
// readers"): bytes they leave untaken must hold back their own session only,
// never a thread that serves others, and never be changed under them; past
// --limit reply-timeout-ms their session ends and its memory comes back. The
// good client runs beside each (attack_fixture.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "attack_fixture.h"

namespace rgpu::security {
namespace {

using Kind = Answer::Kind;
using namespace std::chrono_literals;

void sync_probe(wire::Call::Builder c) { c.setCtxSynchronize(); }

RawPeer::Fill copy_out(uint64_t src, uint64_t size, bool async) {
  return [=](wire::Call::Builder c) {
    auto o = c.initMemcpyDtoH();
    o.setStream(protocol::kNullStream);
    o.setSrc(src);
    o.setSize(size);
    o.setAsync(async);
  };
}

RawPeer::Fill fill_bytes(uint64_t dst, uint64_t size, uint8_t value) {
  return [=](wire::Call::Builder c) {
    auto m = c.initMemset();
    m.setStream(protocol::kNullStream);
    m.setDst(dst);
    m.setElementSize(1);
    m.setCount(size);
    m.setValue(value);
    m.setAsync(false);
  };
}

bool all_equal(const std::vector<uint8_t>& bytes, uint8_t value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](uint8_t b) { return b == value; });
}

// Waits (bounded) until `peers` have left `want` payloads untaken in all.
size_t wait_held(const std::vector<RawPeer*>& peers, size_t want) {
  size_t held = 0;
  for (int i = 0; i < 200; ++i) {
    held = 0;
    for (RawPeer* p : peers) held += p->payloads_held();
    if (held >= want) break;
    std::this_thread::sleep_for(50ms);
  }
  return held;
}

// Three sessions each leave 128 MiB of finished device-to-host copies
// untaken. The device's poller, which completes every session's copies and
// waits on the device, must not wait for them: the good client beside them,
// whose reads and synchronizes go through the same poller, keeps its pace,
// and a new session is served at once.
TEST_F(AttackTest, SessionsThatStopReadingStallNobody) {
  start();
  ASSERT_TRUE(good_->wait_rounds(3));
  constexpr uint64_t kCopy = 64u << 20;
  std::vector<std::unique_ptr<RawPeer>> slow;
  std::vector<RawPeer*> raw;
  for (int i = 0; i < 3; ++i) {
    auto p = session();
    ASSERT_TRUE(p);
    p->stop_reading_payloads();
    const uint64_t ptr = p->alloc(kCopy);
    ASSERT_NE(ptr, 0u);
    ASSERT_TRUE(p->post(RawPeer::kCtx, {copy_out(ptr, kCopy, true), copy_out(ptr, kCopy, true)}));
    raw.push_back(p.get());
    slow.push_back(std::move(p));
  }
  // Their completions have reached them (with the bytes left behind).
  const size_t held = wait_held(raw, 6);
  EXPECT_EQ(held, 6u) << "the untaken copies did not all arrive";

  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(good_->wait_rounds(20, 10000)) << "the good client stalled beside the sessions that stopped reading";
  std::printf("good client: 20 rounds in %.0f ms beside %zu untaken copies\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count(), held);
  auto fresh = session("bob", kBobKey);
  ASSERT_TRUE(fresh);
  for (int i = 0; i < 5; ++i) {
    const Answer a = fresh->call(RawPeer::kCtx, sync_probe);
    EXPECT_TRUE(a.kind == Kind::kReply && a.result == CUDA_SUCCESS) << a.describe();
  }
  // The slow sessions themselves still answer their own calls.
  const Answer own = slow[0]->call(RawPeer::kCtx, sync_probe);
  EXPECT_TRUE(own.kind == Kind::kReply && own.result == CUDA_SUCCESS) << own.describe();
  slow.clear();  // their connections end; the bytes they held are let go
  expect_server_serving();
  EXPECT_TRUE(good_->wait_rounds(5));
}

// A synchronous copy out of an idle context is sent straight from device
// memory by the transport's thread, which does not wait for the client to
// take it. The session's next call, which changes those bytes, must wait
// until they are gone: the client reads the bytes as they were when it
// asked, however late it takes them.
TEST_F(AttackTest, AReplyFromDeviceMemoryHoldsBackTheSessionsNextCall) {
  start();
  constexpr uint64_t kSize = 8u << 20;  // sent by rendezvous: read when taken
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t ptr = p->alloc(kSize);
  ASSERT_NE(ptr, 0u);
  Answer a = p->call(RawPeer::kCtx, fill_bytes(ptr, kSize, 0x11));
  ASSERT_TRUE(a.kind == Kind::kReply && a.result == CUDA_SUCCESS) << a.describe();

  p->stop_reading_payloads();
  uint64_t read_id = 0, fill_id = 0;
  ASSERT_TRUE(p->send(p->batch(RawPeer::kCtx, {copy_out(ptr, kSize, false)}, &read_id)));
  a = p->wait(read_id);
  ASSERT_TRUE(a.kind == Kind::kReply && a.result == CUDA_SUCCESS) << a.describe();
  ASSERT_EQ(p->payloads_held(), 1u);
  ASSERT_TRUE(p->send(p->batch(RawPeer::kCtx, {fill_bytes(ptr, kSize, 0x22)}, &fill_id)));
  a = p->wait(fill_id, 500ms);
  EXPECT_EQ(a.kind, Kind::kTimeout) << "the next call ran while the reply's bytes were untaken: " << a.describe();
  // Meanwhile everybody else is served.
  EXPECT_TRUE(good_->wait_rounds(3));

  auto taken = p->take_held_payloads();
  ASSERT_EQ(taken.size(), 1u);
  ASSERT_EQ(taken[0].size(), kSize);
  EXPECT_TRUE(all_equal(taken[0], 0x11)) << "the reply's bytes were changed before the client took them";
  a = p->wait(fill_id);
  EXPECT_TRUE(a.kind == Kind::kReply && a.result == CUDA_SUCCESS) << a.describe();
  EXPECT_TRUE(all_equal(p->read(ptr, kSize), 0x22));
}

// A client that never takes its results: a synchronous copy out, sent
// from device memory by the transport's thread, holds back that session's
// next call (an asynchronous copy) and nobody else's; past the reply
// time-out the session is ended and its 128 MiB come back.
TEST_F(AttackTest, AReaderThatNeverTakesItsRepliesIsEnded) {
  start({"--limit", "reply-timeout-ms=1500"});
  auto observer = session("bob", kBobKey);
  ASSERT_TRUE(observer);
  const uint64_t before = observer->free_device_bytes();
  ASSERT_GT(before, 0u);

  constexpr uint64_t kCopy = 64u << 20;
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t a = p->alloc(kCopy), b = p->alloc(kCopy);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  p->stop_reading_payloads();
  uint64_t id = 0;
  ASSERT_TRUE(p->send(p->batch(RawPeer::kCtx, {copy_out(a, kCopy, false)}, &id)));
  ASSERT_TRUE(p->post(RawPeer::kCtx, {copy_out(b, kCopy, true)}));
  EXPECT_EQ(wait_held({p.get()}, 1), 1u);
  const uint64_t holding = observer->free_device_bytes();
  EXPECT_LE(holding + 2 * kCopy, before + (8u << 20)) << "the reader's memory is not held";
  EXPECT_TRUE(good_->wait_rounds(10, 5000)) << "the good client stalled beside a session that stopped reading";
  EXPECT_EQ(p->payloads_held(), 1u) << "the asynchronous copy ran while the first reply's bytes were untaken";

  // Ended by the server: its connection closes and its memory comes back.
  EXPECT_TRUE(p->wait_closed(10000ms)) << "a session whose replies stayed untaken past the time-out was not ended";
  const uint64_t margin = 8u << 20;  // the good client allocates beside
  uint64_t after = 0;
  for (int i = 0; i < 200 && (after = observer->free_device_bytes()) + margin < before; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(after + margin, before) << "the ended session's memory was not returned";
  // The observer, which reads everything, is untouched by the time-out.
  const Answer own = observer->call(RawPeer::kCtx, sync_probe);
  EXPECT_TRUE(own.kind == Kind::kReply && own.result == CUDA_SUCCESS) << own.describe();
  expect_server_serving();
}

}  // namespace
}  // namespace rgpu::security
