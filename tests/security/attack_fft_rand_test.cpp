// Malformed cuFFT and cuRAND calls from an authenticated session: forged,
// wrong-kind and destroyed plans and generators, impossible geometries,
// truncated and garbage arguments, executions and outputs whose extents
// leave the session's memory. Each is answered with the library's own
// status and the session goes on; rgpud runs the CPU device with its FFTW
// and cuRAND stand-ins next to it.
#include <cufft.h>
#include <curand.h>
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <vector>

#include "attack_fixture.h"
#include "curand_pack.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/cufft_wire.h"

namespace rgpu::security {
namespace {

namespace fw = protocol::cufft;
namespace rand = apigen::curand;
using Kind = Answer::Kind;
constexpr auto kPlanKind = static_cast<protocol::HandleKind>(fw::kPlanKind);
constexpr auto kGenKind = static_cast<protocol::HandleKind>(24);  // curand.api's @handle

std::function<void(wire::Call::Builder)> call_of(wire::Api api, uint32_t function, std::vector<std::byte> bytes) {
  return [api, function, bytes](wire::Call::Builder c) { protocol::set_invoke(c, api, function, bytes, true); };
}
std::vector<std::byte> bytes_of(const protocol::ArgWriter& w) { return {w.bytes().begin(), w.bytes().end()}; }
uint32_t code(const Answer& a) { return static_cast<uint32_t>(a.result); }

fw::Geometry c2c(int64_t n, int64_t batch) {
  fw::Geometry g;
  g.rank = 1;
  g.n[0] = n;
  g.batch = batch;
  return g;
}

TEST_F(AttackTest, MalformedCufftCallsAreAnsweredAndTheSessionGoesOn) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t mem = p->alloc(4096);
  ASSERT_NE(mem, 0u);
  auto fft = [&](uint32_t fn, const protocol::ArgWriter& w) {
    return code(p->call(RawPeer::kCtx, call_of(wire::Api::CUFFT, fn, bytes_of(w))));
  };
  auto plan_call = [&](uint32_t fn, uint64_t plan) {
    protocol::ArgWriter w;
    w.u64(plan);
    return fft(fn, w);
  };
  auto make = [&](uint64_t plan, const fw::Geometry& g) {
    protocol::ArgWriter w;
    w.u64(plan);
    fw::write_geometry(w, g);
    return fft(fw::kMakePlan, w);
  };
  auto exec_args = [](uint64_t plan, uint64_t in, uint64_t out, int32_t dir) {
    protocol::ArgWriter w;
    w.u64(plan);
    w.u64(in);
    w.u64(out);
    w.scalar(dir);
    return w;
  };

  const uint64_t plan = protocol::make_handle(kPlanKind, 0x5000);
  ASSERT_EQ(plan_call(fw::kCreate, plan), 0u);
  EXPECT_EQ(plan_call(fw::kCreate, plan), uint32_t(CUFFT_INVALID_VALUE));  // not a fresh handle
  EXPECT_EQ(plan_call(fw::kCreate, protocol::make_handle(protocol::HandleKind::kStream, 0x5001)),
            uint32_t(CUFFT_INVALID_VALUE));
  // Executing before the plan is made, and geometries that make nothing.
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, mem, mem, CUFFT_FORWARD)), uint32_t(CUFFT_INVALID_PLAN));
  EXPECT_EQ(make(plan, c2c(0, 1)), uint32_t(CUFFT_INVALID_VALUE));
  EXPECT_EQ(make(plan, c2c(8, -3)), uint32_t(CUFFT_INVALID_VALUE));
  fw::Geometry mixed = c2c(8, 1);
  mixed.otype = fw::kC64F;
  EXPECT_EQ(make(plan, mixed), uint32_t(CUFFT_INVALID_VALUE));
  fw::Geometry rank4 = c2c(8, 1);
  rank4.rank = 4;
  EXPECT_EQ(make(plan, rank4), uint32_t(CUFFT_INVALID_VALUE));  // undecodable
  // 4 transforms of 64 complex floats: 2048 bytes each side.
  ASSERT_EQ(make(plan, c2c(64, 4)), 0u);
  EXPECT_EQ(make(plan, c2c(64, 4)), uint32_t(CUFFT_INVALID_PLAN));  // made once

  const protocol::ArgWriter valid = exec_args(plan, mem, mem + 2048, CUFFT_FORWARD);
  EXPECT_EQ(fft(fw::kExec, valid), 0u);
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, mem, mem, CUFFT_INVERSE)), 0u);  // in place
  // Extents past the allocation, a foreign address, a bad direction.
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, mem, mem + 2056, CUFFT_FORWARD)), uint32_t(CUFFT_INVALID_VALUE));
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, mem + 4000, mem, CUFFT_FORWARD)), uint32_t(CUFFT_INVALID_VALUE));
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, 0x1000, mem, CUFFT_FORWARD)), uint32_t(CUFFT_INVALID_VALUE));
  EXPECT_EQ(fft(fw::kExec, exec_args(plan, mem, mem + 2048, 7)), uint32_t(CUFFT_INVALID_VALUE));
  // Forged and wrong-kind plans.
  EXPECT_EQ(fft(fw::kExec, exec_args(protocol::make_handle(kPlanKind, 0x7777), mem, mem, CUFFT_FORWARD)),
            uint32_t(CUFFT_INVALID_PLAN));
  EXPECT_EQ(fft(fw::kExec, exec_args(protocol::make_handle(kGenKind, 0x5000), mem, mem, CUFFT_FORWARD)),
            uint32_t(CUFFT_INVALID_PLAN));
  // Every truncation and a garbage tail of a valid execution.
  const std::vector<std::byte> ok = bytes_of(valid);
  for (size_t n = 0; n < ok.size(); n += 8) {
    std::vector<std::byte> cut(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(code(p->call(RawPeer::kCtx, call_of(wire::Api::CUFFT, fw::kExec, cut))), uint32_t(CUFFT_INVALID_VALUE))
        << n << " bytes";
  }
  std::vector<std::byte> longer = ok;
  longer.resize(ok.size() + 8, std::byte{0x5a});
  EXPECT_EQ(code(p->call(RawPeer::kCtx, call_of(wire::Api::CUFFT, fw::kExec, longer))), uint32_t(CUFFT_INVALID_VALUE));
  // An ordinal no cuFFT call has.
  EXPECT_EQ(code(p->call(RawPeer::kCtx, call_of(wire::Api::CUFFT, fw::kLastHandFn + 1, {}))),
            uint32_t(CUFFT_NOT_SUPPORTED));
  // A work area outside the session's memory.
  {
    protocol::ArgWriter w;
    w.u64(plan);
    w.u64(0x2000);
    EXPECT_EQ(fft(fw::kSetWorkArea, w), uint32_t(CUFFT_INVALID_VALUE));
  }

  // The session goes on: the valid execution runs; the plan is destroyed once.
  EXPECT_EQ(fft(fw::kExec, valid), 0u);
  EXPECT_EQ(plan_call(fw::kGetSize, plan), 0u);
  EXPECT_EQ(plan_call(fw::kDestroy, plan), 0u);
  EXPECT_EQ(plan_call(fw::kDestroy, plan), uint32_t(CUFFT_INVALID_PLAN));
  EXPECT_EQ(fft(fw::kExec, valid), uint32_t(CUFFT_INVALID_PLAN));
  expect_server_serving();
}

TEST_F(AttackTest, MalformedCurandCallsAreAnsweredAndTheSessionGoesOn) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t mem = p->alloc(4096);
  ASSERT_NE(mem, 0u);
  auto rnd = [&](uint32_t fn, const protocol::ArgWriter& w) {
    return code(p->call(RawPeer::kCtx, call_of(wire::Api::CURAND, fn, bytes_of(w))));
  };
  auto uniform = [&](uint64_t gen, uint64_t out, size_t n) {
    protocol::ArgWriter w;
    rand::pack_curandGenerateUniform(w, gen, out, n);
    return rnd(rand::k_curandGenerateUniform, w);
  };
  const uint64_t gen = protocol::make_handle(kGenKind, 0x5000);
  {
    protocol::ArgWriter w;
    rand::pack_curandCreateGenerator(w, gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    ASSERT_EQ(rnd(rand::k_curandCreateGenerator, w), 0u);
    EXPECT_EQ(rnd(rand::k_curandCreateGenerator, w), uint32_t(CURAND_STATUS_OUT_OF_RANGE));  // not fresh
    protocol::ArgWriter bad;
    rand::pack_curandCreateGenerator(bad, protocol::make_handle(kGenKind, 0x5001), static_cast<curandRngType_t>(77));
    EXPECT_EQ(rnd(rand::k_curandCreateGenerator, bad), uint32_t(CURAND_STATUS_OUT_OF_RANGE));  // no such type
  }
  EXPECT_EQ(uniform(gen, mem, 1024), 0u);
  EXPECT_EQ(uniform(gen, mem, 1025), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  EXPECT_EQ(uniform(gen, mem + 8, 1023), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  EXPECT_EQ(uniform(gen, 0x1000, 4), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  EXPECT_EQ(uniform(gen, mem, size_t(1) << 62), uint32_t(CURAND_STATUS_OUT_OF_RANGE));  // overflowing extent
  EXPECT_EQ(uniform(protocol::make_handle(kGenKind, 0x7777), mem, 4), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  EXPECT_EQ(uniform(protocol::make_handle(kPlanKind, 0x5000), mem, 4), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  EXPECT_EQ(code(p->call(RawPeer::kCtx, call_of(wire::Api::CURAND, 9999, {}))), uint32_t(CURAND_STATUS_TYPE_ERROR));
  EXPECT_EQ(uniform(gen, mem, 1024), 0u);
  {
    protocol::ArgWriter w;
    rand::pack_curandDestroyGenerator(w, gen);
    EXPECT_EQ(rnd(rand::k_curandDestroyGenerator, w), 0u);
    EXPECT_EQ(rnd(rand::k_curandDestroyGenerator, w), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  }
  EXPECT_EQ(uniform(gen, mem, 4), uint32_t(CURAND_STATUS_OUT_OF_RANGE));
  expect_server_serving();
}

}  // namespace
}  // namespace rgpu::security
