// Malformed cuBLASLt calls (Call.invoke api=cublasLt) from an authenticated
// session, against a real rgpud on the CPU device with its cuBLASLt
// stand-in: forged and wrong-kind handles, every truncation of a matmul,
// descriptor bags that are not cuBLASLt's (an attribute it does not have, a
// value too wide for its type, another descriptor's kind), matrices and a
// bias outside the session's memory, a pointer-array layout and cuBLASLt
// 12's removed attributes. Each is answered with cuBLAS's own status and the
// session goes on.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <vector>

#include "attack_fixture.h"
#include "cublasLt_pack.h"
#include "cublas_pack.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/lt_desc.h"

namespace rgpu::security {
namespace {

namespace ltc = apigen::cublasLt;
namespace lt = protocol::lt;
namespace attr = protocol::lt::attr;
constexpr uint32_t kInvalid = CUBLAS_STATUS_INVALID_VALUE;
constexpr uint32_t kNotSupported = CUBLAS_STATUS_NOT_SUPPORTED;
constexpr auto kLtKind = static_cast<protocol::HandleKind>(17);      // cublasLt.api's @handle
constexpr auto kCublasKind = static_cast<protocol::HandleKind>(16);  // cublas.api's

std::function<void(wire::Call::Builder)> lt_call(uint32_t function, std::vector<std::byte> bytes) {
  return [function, bytes](wire::Call::Builder c) {
    protocol::set_invoke(c, wire::Api::CUBLAS_LT, function, bytes, true);
  };
}
std::vector<std::byte> bytes_of(const protocol::ArgWriter& w) { return {w.bytes().begin(), w.bytes().end()}; }
uint32_t code(const Answer& a) { return static_cast<uint32_t>(a.result); }

template <class T>
void put(lt::Desc& d, uint32_t id, T v) {
  ASSERT_EQ(lt::AttrStatus::kOk, lt::set_attr(d, id, &v, sizeof v)) << id;
}
lt::Desc layout(uint64_t rows, uint64_t cols) {
  lt::Desc d;
  d.kind = attr::kLayout;
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t{CUDA_R_32F});
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_LD, static_cast<int64_t>(rows));
  return d;
}

TEST_F(AttackTest, MalformedCublasLtCallsAreAnsweredAndTheSessionGoesOn) {
  start();
  auto p = session();
  ASSERT_TRUE(p);
  const uint64_t mem = p->alloc(4096);  // A (4x4) at 0, D at 256, bias (4) at 512
  ASSERT_NE(mem, 0u);

  const uint64_t handle = protocol::make_handle(kLtKind, 0x6000);
  {
    protocol::ArgWriter w;
    ltc::pack_cublasLtCreate(w, handle);
    Answer a = p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtCreate, bytes_of(w)));
    ASSERT_EQ(a.kind, Answer::Kind::kReply) << a.describe();
    ASSERT_EQ(code(a), 0u) << a.describe();
  }

  lt::Desc op;
  op.kind = attr::kMatmul;
  put(op, attr::CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, int32_t{CUBLAS_COMPUTE_32F});
  put(op, attr::CUBLASLT_MATMUL_DESC_SCALE_TYPE, int32_t{CUDA_R_32F});
  put(op, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_RELU_BIAS});
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, mem + 512);
  lt::Desc m4 = layout(4, 4);
  const float alpha = 1, beta = 0;
  auto matmul = [&](uint64_t h, const lt::Desc& o, const lt::Desc& a_layout, uint64_t a_ptr) {
    protocol::ArgWriter w;
    ltc::pack_cublasLtMatmul(w, h, &o, &alpha, 0, a_ptr, &a_layout, mem, &m4, &beta, 0, mem + 256, &m4, mem + 256,
                             &m4, nullptr, 0, 0, protocol::kNullStream);
    return bytes_of(w);
  };
  auto run = [&](const std::vector<std::byte>& args) {
    return code(p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtMatmul, args)));
  };
  const std::vector<std::byte> valid = matmul(handle, op, m4, mem);
  ASSERT_EQ(run(valid), 0u);

  // A cuBLAS handle is a cuBLASLt handle too; a forged one, a stream, none are not.
  {
    const uint64_t blas = protocol::make_handle(kCublasKind, 0x6001);
    protocol::ArgWriter w;
    apigen::cublas::pack_cublasCreate_v2(w, blas);
    ASSERT_EQ(code(p->call(RawPeer::kCtx, [&](wire::Call::Builder c) {
                protocol::set_invoke(c, wire::Api::CUBLAS, apigen::cublas::k_cublasCreate_v2, w.bytes(), true);
              })),
              0u);
    EXPECT_EQ(run(matmul(blas, op, m4, mem)), 0u);
  }
  EXPECT_EQ(run(matmul(protocol::make_handle(kLtKind, 0x7777), op, m4, mem)), kInvalid);
  EXPECT_EQ(run(matmul(protocol::make_handle(protocol::HandleKind::kStream, 0x6000), op, m4, mem)), kInvalid);
  EXPECT_EQ(run(matmul(0, op, m4, mem)), kInvalid);

  // Every truncation of the record (the descriptor bags cut short among
  // them) and a garbage tail.
  for (size_t n = 0; n < valid.size(); n += 8) {
    std::vector<std::byte> cut(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(run(cut), kInvalid) << n << " bytes";
  }
  std::vector<std::byte> longer = valid;
  longer.resize(valid.size() + 8, std::byte{0x5a});
  EXPECT_EQ(run(longer), kInvalid);

  // Bags that are not cuBLASLt's: an attribute the matmul descriptor does
  // not have, an int32 attribute whose item is no int32, a layout sent
  // where the matmul descriptor belongs.
  {
    lt::Desc bad = op;
    bad.set |= uint64_t{1} << 9;
    EXPECT_EQ(run(matmul(handle, bad, m4, mem)), kInvalid);
    bad = op;
    bad.values[attr::CUBLASLT_MATMUL_DESC_TRANSA] = 0x100000000ull;
    bad.set |= uint64_t{1} << attr::CUBLASLT_MATMUL_DESC_TRANSA;
    EXPECT_EQ(run(matmul(handle, bad, m4, mem)), kInvalid);
    EXPECT_EQ(run(matmul(handle, m4, m4, mem)), kInvalid);
  }

  // Out of range: A larger than its allocation, A at an address that is
  // none of the session's, a bias reaching past the allocation.
  EXPECT_EQ(run(matmul(handle, op, layout(64, 64), mem)), kInvalid);
  EXPECT_EQ(run(matmul(handle, op, m4, 0x1000)), kInvalid);
  {
    lt::Desc far = op;
    put(far, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, mem + 4096 - 8);
    EXPECT_EQ(run(matmul(handle, far, m4, mem)), kInvalid);
    put(far, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, uint64_t{0x2000});
    EXPECT_EQ(run(matmul(handle, far, m4, mem)), kInvalid);
  }

  // What rgpud cannot check is not supported: a pointer-array layout,
  // cuBLASLt 12's atomic-sync attributes (27-30, gone from cuBLASLt 13), the
  // epilogue's auxiliary buffer.
  {
    lt::Desc array = m4;
    put(array, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, uint32_t{CUBLASLT_BATCH_MODE_POINTER_ARRAY});
    EXPECT_EQ(run(matmul(handle, op, array, mem)), kNotSupported);
    for (uint32_t id : {27u, 28u, 29u, 30u, uint32_t{attr::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER}}) {
      lt::Desc refused = op;
      refused.set |= uint64_t{1} << id;
      refused.values[id] = 0;
      EXPECT_EQ(run(matmul(handle, refused, m4, mem)), kNotSupported) << id;
    }
  }

  // The heuristic with a negative count; an ordinal cuBLASLt has no call for.
  {
    const lt::Desc pref = [] {
      lt::Desc d;
      d.kind = attr::kPreference;
      return d;
    }();
    cublasLtMatmulHeuristicResult_t results[1] = {};
    int returned = 0;
    protocol::ArgWriter w;
    ltc::pack_cublasLtMatmulAlgoGetHeuristic(w, handle, &op, &m4, &m4, &m4, &m4, &pref, -3, results, &returned);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtMatmulAlgoGetHeuristic, bytes_of(w)))), kInvalid);
    protocol::ArgWriter ok;
    ltc::pack_cublasLtMatmulAlgoGetHeuristic(ok, handle, &op, &m4, &m4, &m4, &m4, &pref, 1, results, &returned);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtMatmulAlgoGetHeuristic, bytes_of(ok)))), 0u);
  }
  EXPECT_EQ(code(p->call(RawPeer::kCtx, lt_call(99999, {}))), kNotSupported);

  // The session goes on: the valid matmul runs, the handle is destroyed once.
  EXPECT_EQ(run(valid), 0u);
  {
    protocol::ArgWriter w;
    ltc::pack_cublasLtDestroy(w, handle);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtDestroy, bytes_of(w)))), 0u);
    EXPECT_EQ(code(p->call(RawPeer::kCtx, lt_call(ltc::k_cublasLtDestroy, bytes_of(w)))), kInvalid);
  }
  EXPECT_EQ(run(valid), kInvalid);
  expect_server_serving();
}

}  // namespace
}  // namespace rgpu::security
