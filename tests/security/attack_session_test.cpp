// Attacks from authenticated sessions: malformed batches, forged and foreign
// handles, sizes that overflow, handle floods, a kernel aimed at another
// session's memory, and a session killed mid-transfer. The good client runs
// beside each (attack_fixture.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <poll.h>

#include <cstring>
#include <functional>
#include <span>
#include <thread>

#include "driver_pack.h"
#include "rgpu/protocol/args.h"
#include "attack_fixture.h"
#include "driver_calls.h"
#include "client.h"
#include "kernels.h"
#include "wire_edit.h"

namespace rgpu::security {
namespace {

using Kind = Answer::Kind;

// An answer that is an error (as the result or the async error of the
// calls before it) or a closed session; never plain success.
bool is_error(const Answer& a) {
  return a.closed_or_refused() || (a.kind == Kind::kReply && (a.result != CUDA_SUCCESS || a.async_error != CUDA_SUCCESS));
}
#define EXPECT_ERROR(answer) EXPECT_TRUE(is_error(answer)) << "expected an error, got " << (answer).describe()
#define EXPECT_RESULT(answer, code)                                                            \
  do {                                                                                         \
    const Answer& a_ = (answer);                                                               \
    EXPECT_EQ(a_.kind, Kind::kReply) << a_.describe();                                         \
    EXPECT_TRUE(a_.result == (code) || a_.async_error == (code)) << "expected " #code ", got " \
                                                                 << a_.describe();             \
  } while (0)

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed);
  return v;
}

RawPeer::Fill copy_in(uint64_t dst, std::vector<uint8_t> bytes) {
  return [dst, bytes](wire::Call::Builder c) {
    auto in = c.initMemcpyHtoD();
    in.setStream(protocol::kNullStream);
    in.setDst(dst);
    in.setSize(bytes.size());
    in.setBytes(kj::arrayPtr(bytes.data(), bytes.size()));
  };
}
void sync_probe(wire::Call::Builder c) { c.setCtxSynchronize(); }

// A generated driver call (Call.invoke) with its packed arguments, wanting a reply.
std::function<void(wire::Call::Builder)> generated_call(uint32_t function, const protocol::ArgWriter& args) {
  std::vector<std::byte> bytes(args.bytes().begin(), args.bytes().end());
  return [function, bytes](wire::Call::Builder c) {
    protocol::set_invoke(c, wire::Api::DRIVER, function, bytes, true);
  };
}

// ---- malformed batches -----------------------------------------------------

TEST_F(AttackTest, TypeConfusedBatchIsRefused) {
  start();
  const std::vector<uint8_t> bytes = pattern(16, 3);
  auto p = session();
  ASSERT_TRUE(p);
  uint64_t ptr = p->alloc(4096);
  // A valid batch that would succeed: retain the context, copy 16 bytes in.
  auto make = [&](RawPeer& peer, uint64_t dst, uint64_t* id) {
    return peer.batch(RawPeer::kCtx,
                      {[](wire::Call::Builder c) {
                         auto r = c.initPrimaryCtxRetain();
                         r.setHandle(RawPeer::kCtx);
                       },
                       copy_in(dst, bytes)},
                      id);
  };
  uint64_t id = 0;
  ASSERT_TRUE(p->send(make(*p, ptr, &id)));
  const Answer control = p->wait(id);
  ASSERT_EQ(control.kind, Kind::kReply);
  ASSERT_EQ(control.result, CUDA_SUCCESS) << control.describe();

  // Every pointer of it given every other kind, each applied to the batch
  // of the session at hand (a closed session is replaced by a fresh one).
  const auto words = pointer_words(make(*p, ptr, &id));
  ASSERT_GE(words.size(), 7u) << "the sweep found too few pointers";
  static const char* const kKinds[] = {"struct", "list", "far", "other"};
  for (size_t word : words) {
    for (unsigned kind = 0; kind < 4; ++kind) {
      if (!p || p->closed()) {
        p = session();
        ASSERT_TRUE(p);
        ptr = p->alloc(4096);
      }
      const auto base = make(*p, ptr, &id);
      uint64_t original;
      std::memcpy(&original, base.data() + word * 8, 8);
      if ((original & 3) == kind) continue;
      p->send(with_pointer_kind(base, word, kind));
      const Answer a = p->wait(0);
      EXPECT_ERROR(a) << " for the pointer at word " << word << " made " << kKinds[kind];
    }
  }
  expect_server_serving();
}

TEST_F(AttackTest, NamesWithoutTerminatorAreRefused) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->load_kernels(M(10), F(11), "fill"));
  // Controls: terminated names work.
  auto global = p->call(RawPeer::kCtx, [](wire::Call::Builder c) {
    auto g = c.initModuleGetGlobal();
    g.setModule(M(10));
    g.setName("counter");
  });
  ASSERT_EQ(global.result, CUDA_SUCCESS) << global.describe();

  uint64_t id = 0;
  auto get_function = p->batch(RawPeer::kCtx,
                               {[](wire::Call::Builder c) {
                                  auto f = c.initModuleGetFunction();
                                  f.setModule(M(10));
                                  f.setHandle(F(12));
                                  f.setName("poke");
                                },
                                [](wire::Call::Builder c) { c.setCtxSynchronize(); }},
                               &id);
  auto stripped = strip_terminator(get_function, "poke");
  ASSERT_FALSE(stripped.empty());
  p->send(stripped);
  EXPECT_ERROR(p->wait(id));

  auto q = session();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->load_kernels(M(10), F(11), "fill"));
  auto get_global = q->batch(RawPeer::kCtx,
                             {[](wire::Call::Builder c) {
                                auto g = c.initModuleGetGlobal();
                                g.setModule(M(10));
                                g.setName("counter");
                              }},
                             &id);
  stripped = strip_terminator(get_global, "counter");
  ASSERT_FALSE(stripped.empty());
  q->send(stripped);
  EXPECT_ERROR(q->wait(id));
  expect_server_serving();
}

TEST_F(AttackTest, HugeModuleImageIsAnErrorNotAnAllocation) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t huge = uint64_t{1} << 62;
  std::vector<uint8_t> hash(32, 0xab), small(16, 1);
  std::vector<std::byte> payload(4096, std::byte{3});
  auto load = [&](bool with_inline) {
    return [&, with_inline](wire::Call::Builder c) {
      auto m = c.initModuleLoad();
      m.setHandle(M(30));
      m.setHash(kj::arrayPtr(hash.data(), hash.size()));
      m.setImageBytes(huge);
      if (with_inline) m.setImage(kj::arrayPtr(small.data(), small.size()));
    };
  };
  // An answer, not a closed session: the server never tried to allocate.
  EXPECT_RESULT(p->call(RawPeer::kCtx, load(false)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RESULT(p->call(RawPeer::kCtx, load(true)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RESULT(p->call(RawPeer::kCtx, load(false), transport::Bytes(payload.data(), payload.size())),
                CUDA_ERROR_INVALID_VALUE);
  // Under the limit but not matching the bytes sent.
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [&](wire::Call::Builder c) {
                          auto m = c.initModuleLoad();
                          m.setHandle(M(31));
                          m.setHash(kj::arrayPtr(hash.data(), hash.size()));
                          m.setImageBytes(1 << 20);
                        },
                        transport::Bytes(payload.data(), payload.size())),
                CUDA_ERROR_INVALID_VALUE);
  // A real image under a hash that is not its own.
  const auto image = kernels_image();
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [&](wire::Call::Builder c) {
                          auto m = c.initModuleLoad();
                          m.setHandle(M(32));
                          m.setHash(kj::arrayPtr(hash.data(), hash.size()));
                          m.setImage(kj::arrayPtr(image.data(), image.size()));
                          m.setImageBytes(image.size());
                        }),
                CUDA_ERROR_INVALID_VALUE);
  // The session goes on.
  EXPECT_NE(p->alloc(4096), 0u);
  expect_server_serving();
}

TEST_F(AttackTest, ZeroSizedCallsCannotMultiplyABatch) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  // A batch of one call whose list is rewritten to declare 2^21 elements of
  // zero size: a few bytes that, read naively, are millions of calls (each
  // a default ctxCreate) for the session's executor to run. (Cap'n Proto
  // charges such elements to the reader's traversal limit, but each pass
  // over the list is charged anew, and 2^21 stays under it.)
  uint64_t id = 0;
  auto bytes = p->batch(RawPeer::kCtx, {[](wire::Call::Builder c) { c.setCtxSynchronize(); }}, &id);
  const auto words = pointer_words(bytes);
  ASSERT_GE(words.size(), 3u);
  const size_t list = words[2];  // root, batch, calls
  uint64_t w;
  std::memcpy(&w, bytes.data() + list * 8, 8);
  ASSERT_EQ(w & 3, 1u);
  ASSERT_EQ((w >> 32) & 7, 7u) << "not a composite list";
  const uint64_t tag_index = list + 1 + (static_cast<int32_t>(static_cast<uint32_t>(w)) >> 2);
  w &= (uint64_t{1} << 35) - 1;  // no words of content
  std::memcpy(bytes.data() + list * 8, &w, 8);
  const uint64_t tag = uint64_t{1} << 21 << 2;  // 2^21 elements of 0 data and 0 pointer words
  std::memcpy(bytes.data() + tag_index * 8, &tag, 8);
  p->send(bytes);
  const Answer a = p->call(RawPeer::kCtx, sync_probe);
  EXPECT_TRUE(a.closed_or_refused()) << "a batch that declares more calls than its bytes can hold was run: "
                                     << a.describe();
  expect_server_serving();
}

// ---- handles ---------------------------------------------------------------

TEST_F(AttackTest, ForgedForeignAndWrongKindHandlesAreUnknown) {
  start();
  // The victim (bob) holds a stream, an event, a module and a function.
  auto victim = session("bob", kBobKey);
  ASSERT_TRUE(victim);
  ASSERT_TRUE(victim->load_kernels(M(400), F(401), "fill"));
  ASSERT_TRUE(victim->post(RawPeer::kCtx, {streams::create(S(200)),
                                           events::create(E(300))}));
  auto vq = victim->call(RawPeer::kCtx, streams::query(S(200)));
  ASSERT_EQ(vq.result, CUDA_SUCCESS) << vq.describe();
  ASSERT_EQ(vq.async_error, CUDA_SUCCESS) << vq.describe();

  auto p = session();
  ASSERT_TRUE(p);
  // Its own event 500 and stream 600, to misuse as the other kind.
  ASSERT_TRUE(p->load_kernels(M(700), F(701), "fill"));
  ASSERT_TRUE(p->post(RawPeer::kCtx, {events::create(E(500)),
                                      streams::create(S(600))}));
  const std::vector<std::pair<const char*, RawPeer::Fill>> sync_attacks = {
      {"forged stream", [](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(S(0xdead)); }},
      {"stream handle without a kind", [](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(0x1234567); }},
      {"forged event", events::query(E(0x1234))},
      {"forged function", [](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(F(0x7777)); }},
      {"forged module", [](wire::Call::Builder c) {
         auto g = c.initModuleGetGlobal();
         g.setModule(M(0x5555));
         g.setName("counter");
       }},
      {"victim's stream", [](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(S(200)); }},
      {"victim's stream queried", streams::query(S(200))},
      {"victim's event", [](wire::Call::Builder c) { c.initEventSynchronize().setHandle(E(300)); }},
      {"victim's module", [](wire::Call::Builder c) {
         auto g = c.initModuleGetGlobal();
         g.setModule(M(400));
         g.setName("counter");
       }},
      {"victim's function", [](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(F(401)); }},
      {"event as stream", [](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(E(500)); }},
      {"stream as event", [](wire::Call::Builder c) { c.initEventSynchronize().setHandle(S(600)); }},
      {"module as function", [](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(M(700)); }},
      {"function as module", [](wire::Call::Builder c) {
         auto g = c.initModuleGetGlobal();
         g.setModule(F(701));
         g.setName("counter");
       }},
  };
  for (const auto& [what, fill] : sync_attacks) {
    const Answer a = p->call(RawPeer::kCtx, fill);
    EXPECT_ERROR(a) << " for " << what;
    EXPECT_FALSE(a.closed_or_refused()) << what << ": a bad handle should be an error, not a closed session";
  }
  // Async misuse: the error comes with the next sync call.
  const std::vector<std::pair<const char*, RawPeer::Fill>> async_attacks = {
      {"launch of the victim's function", [](wire::Call::Builder c) {
         auto l = c.initLaunchKernel();
         l.setStream(protocol::kNullStream);
         l.setFunction(F(401));
         l.setGridX(1), l.setGridY(1), l.setGridZ(1), l.setBlockX(1), l.setBlockY(1), l.setBlockZ(1);
       }},
      {"launch of a module handle", [](wire::Call::Builder c) {
         auto l = c.initLaunchKernel();
         l.setStream(protocol::kNullStream);
         l.setFunction(M(700));
         l.setGridX(1), l.setGridY(1), l.setGridZ(1), l.setBlockX(1), l.setBlockY(1), l.setBlockZ(1);
       }},
      {"record of the victim's event", events::record(E(300), protocol::kNullStream)},
      {"record on an event used as stream", events::record(E(500), E(500))},
      {"wait on the victim's event", [](wire::Call::Builder c) {
         auto w = c.initStreamWaitEvent();
         w.setStream(S(600));
         w.setEvent(E(300));
       }},
      {"destroy of the victim's stream", streams::destroy(S(200))},
      {"destroy of the victim's event", events::destroy(E(300))},
      {"unload of the victim's module", [](wire::Call::Builder c) { c.initModuleUnload().setHandle(M(400)); }},
      {"destroy of a special stream", streams::destroy(protocol::kLegacyStream)},
      {"event as the stream of a copy", [](wire::Call::Builder c) {
         auto o = c.initMemcpyDtoH();
         o.setStream(protocol::kNullStream);
         o.setSrc(0);
         o.setSize(0);
         o.setStream(E(500));
         o.setAsync(true);
       }},
      {"function from the victim's module", [](wire::Call::Builder c) {
         auto f = c.initModuleGetFunction();
         f.setModule(M(400));
         f.setHandle(F(702));
         f.setName("fill");
       }},
  };
  for (const auto& [what, fill] : async_attacks) {
    const Answer a = p->calls(RawPeer::kCtx, {fill, sync_probe});
    EXPECT_EQ(a.kind, Kind::kReply) << what << ": " << a.describe();
    EXPECT_NE(a.async_error, CUDA_SUCCESS) << what << ": " << a.describe();
  }
  // A context handle the attacker never made (the victim's numbering is
  // its own; 1 exists only in each session's own table).
  EXPECT_RESULT(p->call(C(99), [](wire::Call::Builder c) { c.setMemAlloc(64); }), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_RESULT(p->call(RawPeer::kCtx, [](wire::Call::Builder c) { c.initCtxDestroy().setHandle(C(99)); }),
                CUDA_ERROR_INVALID_CONTEXT);
  // The victim's handles still work.
  auto after = victim->calls(RawPeer::kCtx, {[](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(S(200)); }});
  EXPECT_EQ(after.result, CUDA_SUCCESS) << after.describe();
  after = victim->calls(RawPeer::kCtx, {events::query(E(300))});
  EXPECT_EQ(after.result, CUDA_SUCCESS) << after.describe();
  after = victim->calls(RawPeer::kCtx, {[](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(F(401)); }});
  EXPECT_EQ(after.result, CUDA_SUCCESS) << after.describe();
  expect_server_serving();
}

TEST_F(AttackTest, MoreHandlesThanTheLimitAreOutOfMemoryAndTheSessionGoesOn) {
  start({"--limit", "handles=32"});
  auto p = session();
  ASSERT_TRUE(p);
  std::vector<RawPeer::Fill> creates;
  for (uint64_t h = 1000; h < 1100; ++h) {
    creates.push_back(events::create(E(h)));
  }
  creates.push_back(sync_probe);
  const Answer a = p->calls(RawPeer::kCtx, creates);
  EXPECT_EQ(a.kind, Kind::kReply) << a.describe();
  EXPECT_EQ(a.async_error, CUDA_ERROR_OUT_OF_MEMORY) << a.describe();
  // Streams and modules hit the same bound.
  auto s = p->calls(RawPeer::kCtx, {streams::create(S(5000)), sync_probe});
  EXPECT_EQ(s.async_error, CUDA_ERROR_OUT_OF_MEMORY) << s.describe();
  std::vector<uint8_t> hash(32, 0);
  auto m = p->call(RawPeer::kCtx, [&](wire::Call::Builder c) {
    auto l = c.initModuleLoad();
    l.setHandle(M(5001));
    l.setHash(kj::arrayPtr(hash.data(), hash.size()));
  });
  EXPECT_RESULT(m, CUDA_ERROR_OUT_OF_MEMORY);
  // The session goes on: what it made works, freeing makes room.
  EXPECT_EQ(p->call(RawPeer::kCtx, events::query(E(1000))).result,
            CUDA_SUCCESS);
  EXPECT_NE(p->alloc(4096), 0u);
  auto again = p->calls(RawPeer::kCtx, {events::destroy(E(1000)),
                                        events::create(E(2000)),
                                        events::query(E(2000))});
  EXPECT_EQ(again.result, CUDA_SUCCESS) << again.describe();
  EXPECT_EQ(again.async_error, CUDA_SUCCESS) << again.describe();
  expect_server_serving();
}

// ---- sizes and pointers ----------------------------------------------------

TEST_F(AttackTest, OversizedWrappingAndForeignRangesAreInvalid) {
  start();
  auto victim = session("bob", kBobKey);
  ASSERT_TRUE(victim);
  const uint64_t theirs = victim->alloc(4096);
  ASSERT_NE(theirs, 0u);
  const auto secret = pattern(4096, 9);
  ASSERT_TRUE(victim->write(theirs, secret));

  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t ptr = p->alloc(4096);
  ASSERT_NE(ptr, 0u);
  const uint64_t wrap = UINT64_MAX - ptr + 2;  // ptr + wrap wraps to 1
  struct Attack {
    std::string what;
    RawPeer::Fill fill;
    bool async = false;
  };
  std::vector<Attack> attacks;
  for (bool async : {false, true}) {
    const size_t first = attacks.size();
    const std::string mode = async ? " (async)" : "";
    attacks.push_back({"copy out of UINT64_MAX - ptr + 2 bytes" + mode, [=](wire::Call::Builder c) {
                         auto o = c.initMemcpyDtoH();
                         o.setStream(protocol::kNullStream);
                         o.setSrc(ptr);
                         o.setSize(wrap);
                         o.setAsync(async);
                       }});
    attacks.push_back({"copy in of UINT64_MAX - ptr + 2 bytes" + mode, [=](wire::Call::Builder c) {
                         auto i = c.initMemcpyHtoD();
                         i.setStream(protocol::kNullStream);
                         i.setDst(ptr);
                         i.setSize(wrap);
                         i.setAsync(async);
                       }});
    attacks.push_back({"device copy of UINT64_MAX - ptr + 2 bytes" + mode, [=](wire::Call::Builder c) {
                         auto d = c.initMemcpyDtoD();
                         d.setStream(protocol::kNullStream);
                         d.setDst(ptr);
                         d.setSrc(ptr);
                         d.setSize(wrap);
                         d.setAsync(async);
                       }});
    for (uint8_t es : {1, 2, 4}) {
      attacks.push_back({"memset of 2^64 / " + std::to_string(es) + " (+ 1) elements" + mode, [=](wire::Call::Builder c) {
                           auto m = c.initMemset();
                           m.setStream(protocol::kNullStream);
                           m.setDst(ptr);
                           m.setElementSize(es);
                           // count * size wraps to a small number (for 1 byte: the most there is)
                           m.setCount(es == 1 ? UINT64_MAX : UINT64_MAX / es + 1);
                           m.setAsync(async);
                         }});
    }
    attacks.push_back({"memset of element size 3" + mode, [=](wire::Call::Builder c) {
                         auto m = c.initMemset();
                         m.setStream(protocol::kNullStream);
                         m.setDst(ptr);
                         m.setElementSize(3);
                         m.setCount(4);
                         m.setAsync(async);
                       }});
    attacks.push_back({"copy out of the victim's memory" + mode, [=](wire::Call::Builder c) {
                         auto o = c.initMemcpyDtoH();
                         o.setStream(protocol::kNullStream);
                         o.setSrc(theirs);
                         o.setSize(64);
                         o.setAsync(async);
                       }});
    attacks.push_back({"memset of the victim's memory" + mode, [=](wire::Call::Builder c) {
                         auto m = c.initMemset();
                         m.setStream(protocol::kNullStream);
                         m.setDst(theirs + 8);
                         m.setElementSize(1);
                         m.setCount(8);
                         m.setAsync(async);
                       }});
    attacks.push_back({"device copy from the victim's memory" + mode, [=](wire::Call::Builder c) {
                         auto d = c.initMemcpyDtoD();
                         d.setStream(protocol::kNullStream);
                         d.setDst(ptr);
                         d.setSrc(theirs);
                         d.setSize(64);
                         d.setAsync(async);
                       }});
    attacks.push_back({"device copy into the victim's memory" + mode, [=](wire::Call::Builder c) {
                         auto d = c.initMemcpyDtoD();
                         d.setStream(protocol::kNullStream);
                         d.setDst(theirs);
                         d.setSrc(ptr);
                         d.setSize(64);
                         d.setAsync(async);
                       }});
    attacks.push_back({"copy in past the end of its own allocation" + mode, [=](wire::Call::Builder c) {
                         auto i = c.initMemcpyHtoD();
                         i.setStream(protocol::kNullStream);
                         i.setDst(ptr + 4090);
                         i.setSize(8);
                         const uint8_t b[8] = {};
                         i.setBytes(kj::arrayPtr(b, 8));
                         i.setAsync(async);
                       }});
    for (size_t i = first; i < attacks.size(); ++i) attacks[i].async = async;
  }
  attacks.push_back({"copy in to the victim's memory", copy_in(theirs + 8, pattern(8, 1))});
  attacks.push_back({"free of the victim's allocation", [=](wire::Call::Builder c) { c.setMemFree(theirs); }});
  attacks.push_back({"allocation of 2^64 - 1 bytes", [](wire::Call::Builder c) { c.setMemAlloc(UINT64_MAX); }});
  attacks.push_back({"allocation of 0 bytes", [](wire::Call::Builder c) { c.setMemAlloc(0); }});
  for (const auto& [what, fill, async] : attacks) {
    // A sync call is the last of its batch; an async one is followed by one.
    const Answer a = async ? p->calls(RawPeer::kCtx, {fill, sync_probe}) : p->call(RawPeer::kCtx, fill);
    EXPECT_EQ(a.kind, Kind::kReply) << what << ": " << a.describe();
    EXPECT_ERROR(a) << " for " << what;
  }
  // The exact codes of the synchronous forms.
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [=](wire::Call::Builder c) {
                          auto o = c.initMemcpyDtoH();
                          o.setStream(protocol::kNullStream);
                          o.setSrc(ptr);
                          o.setSize(wrap);
                        }),
                CUDA_ERROR_INVALID_VALUE);
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [=](wire::Call::Builder c) {
                          auto m = c.initMemset();
                          m.setStream(protocol::kNullStream);
                          m.setDst(ptr);
                          m.setElementSize(4);
                          m.setCount(UINT64_MAX / 4 + 1);
                        }),
                CUDA_ERROR_INVALID_VALUE);
  EXPECT_RESULT(p->call(RawPeer::kCtx, copy_in(theirs, pattern(16, 1))), CUDA_ERROR_INVALID_VALUE);
  // Another session's allocation is not found: a generated call, as the
  // client library sends cuMemGetAddressRange.
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [=](wire::Call::Builder c) {
                          protocol::ArgWriter args;
                          apigen::driver::pack_cuMemGetAddressRange_v2(args, nullptr, nullptr, theirs);
                          generated_call(apigen::driver::k_cuMemGetAddressRange_v2, args)(c);
                        }),
                CUDA_ERROR_NOT_FOUND);
  // A payload that is not the size the call says.
  std::vector<std::byte> payload(100 * 1024, std::byte{5});
  EXPECT_RESULT(p->call(RawPeer::kCtx,
                        [=](wire::Call::Builder c) {
                          auto i = c.initMemcpyHtoD();
                          i.setStream(protocol::kNullStream);
                          i.setDst(ptr);
                          i.setSize(200 * 1024);
                        },
                        transport::Bytes(payload.data(), payload.size())),
                CUDA_ERROR_INVALID_VALUE);
  // None of it touched the victim's bytes.
  EXPECT_EQ(victim->read(theirs, secret.size()), secret);
  expect_server_serving();
}

TEST_F(AttackTest, KernelCannotWriteAnotherSessionsMemory) {
  start();
  auto victim = session("bob", kBobKey);
  ASSERT_TRUE(victim);
  const uint64_t theirs = victim->alloc(4096);
  ASSERT_NE(theirs, 0u);
  const auto secret = pattern(4096, 5);
  ASSERT_TRUE(victim->write(theirs, secret));

  auto p = session();
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->load_kernels(M(10), F(11), "poke"));
  // Control: the kernel does store through a pointer of its own session.
  const uint64_t mine = p->alloc(4096);
  ASSERT_NE(mine, 0u);
  const Answer own = p->launch_and_sync(F(11), poke_params(mine));
  ASSERT_EQ(own.result, CUDA_SUCCESS) << own.describe();
  ASSERT_EQ(own.async_error, CUDA_SUCCESS) << own.describe();
  const auto got = p->read(mine, 4);
  ASSERT_EQ(got.size(), 4u);
  uint32_t word;
  std::memcpy(&word, got.data(), 4);
  EXPECT_EQ(word, 0xdeadbeefu);

  // The attack: the victim's pointer as the kernel's argument.
  const Answer a = p->launch_and_sync(F(11), poke_params(theirs + 64));
  EXPECT_RESULT(a, CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(victim->read(theirs, secret.size()), secret) << "the attacker's kernel changed the victim's memory";
  // The victim's session is unharmed.
  EXPECT_TRUE(victim->write(theirs, pattern(4096, 6)));
  expect_server_serving();
}

// ---- a session killed mid-way -------------------------------------------------

// The child process of KilledSessionLeavesTheServerServing: a client that
// holds 256 MiB and copies into it until it is killed.
int hog_main(const std::string& address) {
  shim::ClientOptions o;
  o.server = address;
  o.tenant = "bob";
  o.auth_token = kBobKey;
  auto c = shim::Client::connect(o);
  if (!c.is_ok()) {
    std::printf("connect failed: %s\n", c.status().to_string().c_str());
    return 1;
  }
  shim::Client& client = *c.value();
  client.call_async(0, [](wire::Call::Builder call) { call.initPrimaryCtxRetain().setHandle(RawPeer::kCtx); });
  auto alloc = client.call_sync(RawPeer::kCtx, [](wire::Call::Builder call) { call.setMemAlloc(256u << 20); });
  if (alloc.result != CUDA_SUCCESS) return 2;
  std::vector<std::byte> bytes(64u << 20, std::byte{7});
  for (int i = 0; i < 100000; ++i) {
    const shim::SyncResult r = client.call_sync(
        RawPeer::kCtx,
        [&](wire::Call::Builder call) {
          auto in = call.initMemcpyHtoD();
          in.setStream(protocol::kNullStream);
          in.setDst(alloc.values[0] + (i % 4) * bytes.size());
          in.setSize(bytes.size());
        },
        transport::Bytes(bytes.data(), bytes.size()));
    if (i == 0) {
      // The parent checks that the session holds its memory from here on.
      if (r.result != CUDA_SUCCESS) std::printf("first copy failed: %d\n", r.result);
      else std::printf("ready\n");
      std::fflush(stdout);
    }
  }
  return 0;
}

TEST_F(AttackTest, KilledSessionLeavesTheServerServing) {
  start();
  auto observer = session("bob", kBobKey);
  ASSERT_TRUE(observer);
  const uint64_t before = observer->free_device_bytes();
  ASSERT_GT(before, 0u);

  int out[2];
  ASSERT_EQ(pipe(out), 0);
  // Everything the child needs is built before fork: only exec follows.
  std::string self(4096, '\0');
  self.resize(static_cast<size_t>(readlink("/proc/self/exe", self.data(), self.size())));
  std::string mode = "RGPU_SECURITY_CHILD=hog", where = "RGPU_SECURITY_SERVER=" + server_->address();
  std::vector<std::string> env = {mode, where};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* argv[] = {self.data(), nullptr};
  const pid_t child = fork();
  if (child == 0) {
    dup2(out[1], 1);
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  close(out[1]);
  ASSERT_GT(child, 0);
  char buf[64] = {};
  pollfd pfd{out[0], POLLIN, 0};
  ssize_t n = 0;
  if (poll(&pfd, 1, 30000) > 0) n = read(out[0], buf, sizeof buf - 1);  // "ready": a transfer is under way
  close(out[0]);
  EXPECT_GT(n, 0);
  EXPECT_NE(std::string(buf).find("ready"), std::string::npos) << buf;
  const uint64_t held = observer->free_device_bytes();
  // The child must still be there to be killed mid-transfer.
  int status = 0;
  const pid_t gone = waitpid(child, &status, WNOHANG);
  EXPECT_EQ(gone, 0) << "the child ended by itself: "
                     << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                             : "exit " + std::to_string(WEXITSTATUS(status)));
  // The good client allocates and frees a few KiB all the while (it holds up
  // to 128 KiB at any moment): compare with a margin for it.
  const uint64_t margin = 8u << 20;
  EXPECT_LE(held + (256u << 20), before + margin) << "the child's memory is not held";
  // Kill it while its next 64 MiB copy is in flight.
  if (gone == 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  expect_server_serving();
  // Its memory comes back (bounded wait: the server tears the session down).
  uint64_t after = 0;
  for (int i = 0; i < 200 && (after = observer->free_device_bytes()) + margin < before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(after + margin, before) << "the killed session's memory was not returned";
  // And a new client is served.
  GoodClient late(server_->address(), "bob", kBobKey);
  ASSERT_TRUE(late.start()) << late.tally().first_problem;
  EXPECT_TRUE(late.wait_rounds(2));
  const auto t = late.stop();
  EXPECT_EQ(t.wrong + t.errors, 0u) << t.first_problem;
}

}  // namespace

// The test binary runs as the hog child when the parent asks for it.
int child_main() {
  const char* mode = std::getenv("RGPU_SECURITY_CHILD");
  const char* server = std::getenv("RGPU_SECURITY_SERVER");
  if (mode == nullptr || server == nullptr) return -1;
  if (std::string(mode) == "hog") return hog_main(server);
  return 2;
}

}  // namespace rgpu::security

int main(int argc, char** argv) {
  if (std::getenv("RGPU_SECURITY_CHILD") != nullptr) return rgpu::security::child_main();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
