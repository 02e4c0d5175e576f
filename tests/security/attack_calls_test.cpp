// Typed handles and per-context checks through a real rgpud, and calls the
// server does not know or cannot read: each is refused with the code CUDA
// would give, and the session goes on.
#include <gtest/gtest.h>

#include <capnp/any.h>
#include <capnp/schema.h>

#include <cstring>

#include "attack_fixture.h"
#include "driver_calls.h"
#include "wire_edit.h"

namespace rgpu::security {
namespace {

using Kind = Answer::Kind;

void expect_refused(const Answer& a, CUresult code, const char* what) {
  EXPECT_EQ(a.kind, Kind::kReply) << what << ": " << a.describe();
  EXPECT_EQ(a.result, code) << what << ": " << a.describe();
}

// The session still works: an allocation and a query answer.
void expect_session_goes_on(RawPeer& p) {
  EXPECT_NE(p.alloc(256), 0u);
  const Answer a = p.call(RawPeer::kCtx, [](wire::Call::Builder c) { c.setCtxSynchronize(); });
  EXPECT_EQ(a.result, CUDA_SUCCESS) << a.describe();
  EXPECT_EQ(a.async_error, CUDA_SUCCESS) << a.describe();
}

TEST_F(AttackTest, ForgedAndWrongKindHandlesAreInvalidHandles) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->post(RawPeer::kCtx, {streams::create(S(1)),
                                      events::create(E(1))}));
  expect_refused(p->call(RawPeer::kCtx, streams::query(S(1))),
                 CUDA_SUCCESS, "the live stream");
  // Of the right kind, never minted by this session.
  expect_refused(p->call(RawPeer::kCtx, streams::query(S(2))),
                 CUDA_ERROR_INVALID_HANDLE, "a forged stream");
  // A live handle of another kind where a stream belongs, and the reverse.
  expect_refused(p->call(RawPeer::kCtx, streams::query(E(1))),
                 CUDA_ERROR_INVALID_HANDLE, "an event as a stream");
  expect_refused(p->call(RawPeer::kCtx, events::query(S(1))),
                 CUDA_ERROR_INVALID_HANDLE, "a stream as an event");
  // The bare numbers of earlier protocols mean nothing now.
  expect_refused(p->call(RawPeer::kCtx, streams::query(0x100)),
                 CUDA_ERROR_INVALID_HANDLE, "a handle without a kind");
  expect_refused(p->call(1, [](wire::Call::Builder c) { c.setCtxSynchronize(); }), CUDA_ERROR_INVALID_CONTEXT,
                 "a context handle without a kind");
  // A stream handle minted under a reserved serial cannot be created.
  const Answer reserved = p->calls(RawPeer::kCtx, {streams::create(protocol::kLegacyStream),
                                                  [](wire::Call::Builder c) { c.setCtxSynchronize(); }});
  EXPECT_EQ(reserved.async_error, CUDA_ERROR_INVALID_VALUE) << reserved.describe();
  expect_session_goes_on(*p);
  expect_server_serving();
}

TEST_F(AttackTest, PointersOfAnotherContextAndLengthsPastAnAllocationAreInvalid) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t mine = p->alloc(4096);
  ASSERT_NE(mine, 0u);
  // A second context of the same session, with memory of its own.
  const uint64_t other_ctx = C(1);
  Answer a = p->calls(other_ctx, {[&](wire::Call::Builder c) {
                                    auto cc = c.initCtxCreate();
                                    cc.setHandle(other_ctx);
                                    cc.setDevice(0);
                                  },
                                  [](wire::Call::Builder c) { c.setMemAlloc(4096); }});
  ASSERT_EQ(a.result, CUDA_SUCCESS) << a.describe();
  ASSERT_EQ(a.async_error, CUDA_SUCCESS) << a.describe();
  ASSERT_EQ(a.values.size(), 1u);
  const uint64_t theirs = a.values[0];

  auto read = [](uint64_t src, uint64_t size) {
    return [=](wire::Call::Builder c) {
      auto o = c.initMemcpyDtoH();
      o.setStream(protocol::kNullStream);
      o.setSrc(src);
      o.setSize(size);
    };
  };
  expect_refused(p->call(RawPeer::kCtx, read(mine, 4096)), CUDA_SUCCESS, "its own whole allocation");
  expect_refused(p->call(RawPeer::kCtx, read(theirs, 16)), CUDA_ERROR_INVALID_VALUE,
                 "memory of the session's other context");
  expect_refused(p->call(other_ctx, read(mine, 16)), CUDA_ERROR_INVALID_VALUE, "and the other way round");
  expect_refused(p->call(RawPeer::kCtx, read(mine, 4097)), CUDA_ERROR_INVALID_VALUE, "one byte past the end");
  expect_refused(p->call(RawPeer::kCtx, read(mine + 4000, 100)), CUDA_ERROR_INVALID_VALUE,
                 "a range that runs past the end");
  expect_refused(p->call(RawPeer::kCtx, [&](wire::Call::Builder c) { c.setMemFree(theirs); }),
                 CUDA_ERROR_INVALID_VALUE, "freeing the other context's memory");
  // A stream of the other context does not carry this context's copies.
  ASSERT_TRUE(p->post(other_ctx, {streams::create(S(7))}));
  expect_refused(p->call(RawPeer::kCtx,
                         [&](wire::Call::Builder c) {
                           auto o = c.initMemcpyDtoH();
                           o.setStream(S(7));
                           o.setSrc(mine);
                           o.setSize(16);
                         }),
                 CUDA_ERROR_INVALID_HANDLE, "a stream of the other context");
  expect_refused(p->call(other_ctx, read(theirs, 4096)), CUDA_SUCCESS, "the other context's own memory");
  expect_session_goes_on(*p);
  expect_server_serving();
}

// Sets the union discriminant of `call` to `which`, one this build may not know.
void set_which(wire::Call::Builder call, uint16_t which) {
  const uint32_t offset = capnp::Schema::from<wire::Call>().getProto().getStruct().getDiscriminantOffset();
  capnp::AnyStruct::Builder any = capnp::toAny(call);
  auto data = any.getDataSection();
  ASSERT_LE((offset + 1) * 2, data.size());
  std::memcpy(data.begin() + offset * 2, &which, sizeof which);
}

TEST_F(AttackTest, UnknownAndUndecodableCallsAreNotSupportedAndTheSessionGoesOn) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  // A call from a newer client: a union member this server does not have.
  expect_refused(p->call(RawPeer::kCtx,
                         [](wire::Call::Builder c) {
                           c.setCtxSynchronize();
                           c.setWantsReply(true);
                           set_which(c, 999);
                         }),
                 CUDA_ERROR_NOT_SUPPORTED, "an unknown call that wants a reply");
  // The same, async: reported at the next sync call.
  const Answer async = p->calls(RawPeer::kCtx, {[](wire::Call::Builder c) {
                                                 c.setCtxSynchronize();
                                                 set_which(c, 998);
                                               },
                                               [](wire::Call::Builder c) { c.setCtxSynchronize(); }});
  EXPECT_EQ(async.result, CUDA_SUCCESS) << async.describe();
  EXPECT_EQ(async.async_error, CUDA_ERROR_NOT_SUPPORTED) << async.describe();
  // A generated call of a function no dispatch row has.
  expect_refused(p->call(RawPeer::kCtx,
                         [](wire::Call::Builder c) {
                           auto in = c.initInvoke();
                           in.setApi(wire::Api::DRIVER);
                           in.setFunction(0xfffffu);
                           c.setWantsReply(true);
                         }),
                 CUDA_ERROR_NOT_SUPPORTED, "an invoke of an unknown function");
  // An invoke whose record is not a struct: the call cannot be read, the
  // message around it can.
  uint64_t id = 0;
  auto bytes = p->batch(RawPeer::kCtx,
                        {[](wire::Call::Builder c) {
                          auto in = c.initInvoke();
                          in.setApi(wire::Api::DRIVER);
                          in.setFunction(1);
                          c.setWantsReply(true);
                        }},
                        &id);
  const auto words = pointer_words(bytes);
  ASSERT_GE(words.size(), 3u);
  // The last pointer met is the call's invoke record: made an empty list of
  // bytes (well-formed, in bounds), it is no struct to read.
  uint64_t w;
  std::memcpy(&w, bytes.data() + words.back() * 8, 8);
  ASSERT_EQ(w & 3, 0u);
  w = (w & 0xfffffffcull) | 1 | (uint64_t{2} << 32);
  std::memcpy(bytes.data() + words.back() * 8, &w, 8);
  p->send(bytes);
  expect_refused(p->wait(id), CUDA_ERROR_NOT_SUPPORTED, "an undecodable invoke");
  expect_session_goes_on(*p);
  expect_server_serving();
}

}  // namespace
}  // namespace rgpu::security
