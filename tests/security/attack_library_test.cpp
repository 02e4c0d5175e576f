// Malformed calls of a remoted library (cuBLAS, Call.invoke api=cublas) from
// an authenticated session: forged and wrong-kind handles, an unknown
// ordinal, truncated and garbage arguments, device ranges outside the
// session's memory, a scalar whose pointer mode disagrees with the handle's.
// Each is answered with cuBLAS's own status and the session goes on; rgpud
// runs the CPU device with its cuBLAS stand-in next to it.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <vector>

#include "attack_fixture.h"
#include "cublas_pack.h"
#include "rgpu/protocol/args.h"

namespace rgpu::security {
namespace {

namespace blas = apigen::cublas;
using Kind = Answer::Kind;
constexpr uint32_t kInvalid = CUBLAS_STATUS_INVALID_VALUE;
constexpr uint32_t kNotSupported = CUBLAS_STATUS_NOT_SUPPORTED;
constexpr auto kCublasKind = static_cast<protocol::HandleKind>(16);  // cublas.api's @handle

std::function<void(wire::Call::Builder)> cublas_call(uint32_t function, std::vector<std::byte> bytes) {
  return [function, bytes](wire::Call::Builder c) {
    protocol::set_invoke(c, wire::Api::CUBLAS, function, bytes, true);
  };
}
std::vector<std::byte> bytes_of(const protocol::ArgWriter& w) { return {w.bytes().begin(), w.bytes().end()}; }

uint32_t code(const Answer& a) { return static_cast<uint32_t>(a.result); }

TEST_F(AttackTest, MalformedLibraryCallsAreAnsweredAndTheSessionGoesOn) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t mem = p->alloc(4096);
  ASSERT_NE(mem, 0u);

  // A real handle (created through rgpud's table), and a query on it.
  const uint64_t handle = protocol::make_handle(kCublasKind, 0x5000);
  {
    protocol::ArgWriter w;
    blas::pack_cublasCreate_v2(w, handle);
    Answer a = p->call(RawPeer::kCtx, cublas_call(blas::k_cublasCreate_v2, bytes_of(w)));
    ASSERT_EQ(a.kind, Kind::kReply) << a.describe();
    ASSERT_EQ(code(a), 0u) << a.describe();
  }
  auto math_mode = [&](uint64_t h) {
    protocol::ArgWriter w;
    cublasMath_t mode{};
    blas::pack_cublasGetMathMode(w, h, &mode);
    return p->call(RawPeer::kCtx, cublas_call(blas::k_cublasGetMathMode, bytes_of(w)));
  };
  ASSERT_EQ(code(math_mode(handle)), 0u);

  // The same handle created again, a forged one, a stream handle, no handle.
  {
    protocol::ArgWriter w;
    blas::pack_cublasCreate_v2(w, handle);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasCreate_v2, bytes_of(w)))), kInvalid);
  }
  EXPECT_EQ(code(math_mode(protocol::make_handle(kCublasKind, 0x7777))), kInvalid);
  EXPECT_EQ(code(math_mode(protocol::make_handle(protocol::HandleKind::kStream, 0x5000))), kInvalid);
  EXPECT_EQ(code(math_mode(0)), kInvalid);

  // An ordinal no cuBLAS call has, and one for an API with no calls.
  EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(99999, {}))), kNotSupported);

  // A valid gemm's arguments: every truncation and a garbage tail refused.
  float alpha = 1, beta = 0;
  protocol::ArgWriter gemm;
  blas::pack_cublasSgemm_v2(gemm, handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, 0, mem, 4, mem + 64, 4, &beta, 0,
                            mem + 128, 4);
  const std::vector<std::byte> valid = bytes_of(gemm);
  for (size_t n = 0; n < valid.size(); n += 8) {
    std::vector<std::byte> cut(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, cut))), kInvalid) << n << " bytes";
  }
  std::vector<std::byte> longer = valid;
  longer.resize(valid.size() + 8, std::byte{0x5a});
  EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, longer))), kInvalid);

  // Matrices outside the session's memory: past the allocation, and an
  // address that is none of its allocations.
  {
    protocol::ArgWriter w;
    blas::pack_cublasSgemm_v2(w, handle, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha, 0, mem, 64, mem, 64, &beta, 0,
                              mem, 64);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, bytes_of(w)))), kInvalid);
  }
  {
    protocol::ArgWriter w;
    blas::pack_cublasSgemm_v2(w, handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, 0, 0x1000, 4, mem, 4, &beta, 0, mem,
                              4);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, bytes_of(w)))), kInvalid);
  }
  // alpha sent as a device address while the handle is in host mode: the
  // library would read it as host memory.
  {
    protocol::ArgWriter w;
    blas::pack_cublasSgemm_v2(w, handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, reinterpret_cast<const float*>(mem), 1,
                              mem, 4, mem + 64, 4, &beta, 0, mem + 128, 4);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, bytes_of(w)))), kInvalid);
  }
  // A leading dimension below the row count, a transpose out of range.
  {
    protocol::ArgWriter w;
    blas::pack_cublasSgemm_v2(w, handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, 0, mem, 1, mem + 64, 4, &beta, 0,
                              mem + 128, 4);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, bytes_of(w)))), kInvalid);
    protocol::ArgWriter t;
    blas::pack_cublasSgemm_v2(t, handle, static_cast<cublasOperation_t>(9), CUBLAS_OP_N, 4, 4, 4, &alpha, 0, mem, 4,
                              mem + 64, 4, &beta, 0, mem + 128, 4);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, bytes_of(t)))), kInvalid);
  }

  // The session goes on: the valid gemm runs, the handle answers, and it is
  // destroyed once.
  EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasSgemm_v2, valid))), 0u);
  EXPECT_EQ(code(math_mode(handle)), 0u);
  {
    protocol::ArgWriter w;
    blas::pack_cublasDestroy_v2(w, handle);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasDestroy_v2, bytes_of(w)))), 0u);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, cublas_call(blas::k_cublasDestroy_v2, bytes_of(w)))), kInvalid);
  }
  EXPECT_EQ(code(math_mode(handle)), kInvalid);
  expect_server_serving();
}

}  // namespace
}  // namespace rgpu::security
