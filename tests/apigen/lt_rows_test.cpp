// cuBLASLt's generated calls (cublasLt.api) in one process: the descriptor
// bags both sides share (rgpu/protocol/lt_desc.h), the client's pack of
// cublasLtMatmul and its heuristic, their rows against a fake session and a
// fake cuBLASLt table that records the descriptors rgpud rebuilds, and every
// refusal: forged handles, truncations, malformed bags, out-of-range
// matrices, bias and scale pointers, and what rgpud does not check.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "../../protocol/generated/cublasLt_pack.h"
#include "fakes.h"
#include "library_tables.h"
#include "rgpu/protocol/lt_desc.h"

namespace rgpu::server::apigen_test {
namespace {

namespace ltc = apigen::cublasLt;
namespace lt = protocol::lt;
namespace attr = protocol::lt::attr;
using protocol::ArgReader;
using protocol::ArgWriter;
constexpr auto kLtKind = static_cast<protocol::HandleKind>(17);
constexpr auto kCublasKind = static_cast<protocol::HandleKind>(16);
constexpr uint32_t kInvalid = CUBLAS_STATUS_INVALID_VALUE;
constexpr uint32_t kNotSupported = CUBLAS_STATUS_NOT_SUPPORTED;

// A descriptor the fake library made: its create arguments and attributes.
struct FakeDesc {
  int kind = 0;
  std::map<uint32_t, uint64_t> set;  // id -> value bytes, zero-extended
  bool destroyed = false;
};

struct FakeLt {
  std::vector<FakeDesc*> made;
  int handles = 0, destroyed = 0, matmuls = 0, heuristics = 0;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};
  float alpha = 0;
  const void* a = nullptr;
  void* d = nullptr;
  bool algo_seen = false;
  uint64_t algo_word = 0;
  cudaStream_t stream = nullptr;
  cublasStatus_t set_status = CUBLAS_STATUS_SUCCESS;
};
FakeLt g_lt;
int g_lt_object;

FakeDesc* make(int kind) {
  g_lt.made.push_back(new FakeDesc{kind, {}, false});
  return g_lt.made.back();
}
template <class T, class Attr>
cublasStatus_t set_attr(T d, Attr attr_id, const void* buf, size_t size) {
  if (g_lt.set_status != CUBLAS_STATUS_SUCCESS) return g_lt.set_status;
  uint64_t v = 0;
  std::memcpy(&v, buf, size);
  reinterpret_cast<FakeDesc*>(d)->set[static_cast<uint32_t>(attr_id)] = v;
  return CUBLAS_STATUS_SUCCESS;
}
template <class T>
cublasStatus_t destroy(T d) {
  reinterpret_cast<FakeDesc*>(d)->destroyed = true;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t fake_create(cublasLtHandle_t* h) {
  ++g_lt.handles;
  *h = reinterpret_cast<cublasLtHandle_t>(&g_lt_object);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_destroy(cublasLtHandle_t) {
  ++g_lt.destroyed;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_matmul_create(cublasLtMatmulDesc_t* d, cublasComputeType_t, cudaDataType_t) {
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(make(attr::kMatmul));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_layout_create(cublasLtMatrixLayout_t* d, cudaDataType, uint64_t, uint64_t, int64_t) {
  *d = reinterpret_cast<cublasLtMatrixLayout_t>(make(attr::kLayout));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_pref_create(cublasLtMatmulPreference_t* d) {
  *d = reinterpret_cast<cublasLtMatmulPreference_t>(make(attr::kPreference));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_matmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void* alpha, const void* a,
                           cublasLtMatrixLayout_t al, const void*, cublasLtMatrixLayout_t bl, const void*,
                           const void*, cublasLtMatrixLayout_t cl, void* d, cublasLtMatrixLayout_t dl,
                           const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t stream) {
  ++g_lt.matmuls;
  g_lt.handle = h;
  g_lt.op = op;
  g_lt.layouts[0] = al;
  g_lt.layouts[1] = bl;
  g_lt.layouts[2] = cl;
  g_lt.layouts[3] = dl;
  std::memcpy(&g_lt.alpha, alpha, sizeof(float));
  g_lt.a = a;
  g_lt.d = d;
  g_lt.algo_seen = algo != nullptr;
  if (algo) g_lt.algo_word = algo->data[3];
  g_lt.stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int requested,
                              cublasLtMatmulHeuristicResult_t* results, int* returned) {
  ++g_lt.heuristics;
  std::memset(results, 0, sizeof *results);
  results[0].algo.data[0] = 0x1234;
  results[0].algo.data[7] = 0x5678;
  results[0].workspaceSize = 4096;
  results[0].wavesCount = 1.5f;
  *returned = requested > 0 ? 1 : 0;
  return CUBLAS_STATUS_SUCCESS;
}

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

lt::Desc bag(uint32_t kind) {
  lt::Desc d;
  d.kind = kind;
  return d;
}
template <class T>
void put(lt::Desc& d, uint32_t id, T v) {
  ASSERT_EQ(lt::AttrStatus::kOk, lt::set_attr(d, id, &v, sizeof v)) << id;
}
// A column-major float layout.
lt::Desc layout(uint64_t rows, uint64_t cols, int64_t ld) {
  lt::Desc d = bag(attr::kLayout);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t{CUDA_R_32F});
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_LD, ld);
  return d;
}

class LtRows : public ::testing::Test {
 protected:
  void SetUp() override {
    for (FakeDesc* d : g_lt.made) delete d;
    g_lt = FakeLt{};
    table.cublasLtCreate = fake_create;
    table.cublasLtDestroy = fake_destroy;
    table.cublasLtMatmul = fake_matmul;
    table.cublasLtMatmulAlgoGetHeuristic = fake_heuristic;
    table.cublasLtMatmulDescCreate = fake_matmul_create;
    table.cublasLtMatmulDescSetAttribute = set_attr<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>;
    table.cublasLtMatmulDescDestroy = destroy<cublasLtMatmulDesc_t>;
    table.cublasLtMatrixLayoutCreate = fake_layout_create;
    table.cublasLtMatrixLayoutSetAttribute = set_attr<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>;
    table.cublasLtMatrixLayoutDestroy = destroy<cublasLtMatrixLayout_t>;
    table.cublasLtMatmulPreferenceCreate = fake_pref_create;
    table.cublasLtMatmulPreferenceSetAttribute = set_attr<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t>;
    table.cublasLtMatmulPreferenceDestroy = destroy<cublasLtMatmulPreference_t>;
    env.set_library(CublasLtTable::kIndex, &table);
    a = env.allocate(8 * 8 * 4);
    d = env.allocate(8 * 8 * 4);
    bias = env.allocate(8 * 4);
    ArgWriter w;
    ltc::pack_cublasLtCreate(w, handle);
    ASSERT_EQ(0u, run(ltc::k_cublasLtCreate, w).code);
    op = bag(attr::kMatmul);
    put(op, attr::CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, int32_t{CUBLAS_COMPUTE_32F});
    put(op, attr::CUBLASLT_MATMUL_DESC_SCALE_TYPE, int32_t{CUDA_R_32F});
    put(op, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_RELU_BIAS});
    put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    al = layout(8, 8, 8);
    dl = layout(8, 8, 8);
  }
  void TearDown() override {
    for (FakeDesc* f : g_lt.made) delete f;
    g_lt.made.clear();
  }

  InvokeOutcome run(uint32_t function, const ArgWriter& w) {
    const DispatchRow* row = find_row(wire::Api::CUBLAS_LT, function);
    EXPECT_NE(nullptr, row);
    return row ? row->run(env, view(w.bytes())) : InvokeOutcome{};
  }
  // D = relu(alpha * A * A + bias), C = D, host alpha and beta.
  ArgWriter matmul(uint64_t h, const cublasLtMatmulAlgo_t* algo = nullptr) {
    ArgWriter w;
    ltc::pack_cublasLtMatmul(w, h, &op, &alpha, 0, a, &al, a, &al, &beta, 0, d, &dl, d, &dl, algo, 0, 0,
                             protocol::kNullStream);
    return w;
  }
  uint32_t matmul_code() {
    InvokeOutcome out = run(ltc::k_cublasLtMatmul, matmul(handle));
    return out.code;
  }

  CublasLtTable table;
  FakeEnv env{fake_driver()};
  const uint64_t handle = protocol::make_handle(kLtKind, 0x910);
  uint64_t a = 0, d = 0, bias = 0;
  lt::Desc op, al, dl;
  float alpha = 1.5f, beta = 0;
};

TEST(LtDesc, AttributesHaveCublasLtSizesAndDefaults) {
  lt::Desc d = bag(attr::kMatmul);
  const int32_t i32 = 1;
  const int64_t i64 = 1;
  EXPECT_EQ(lt::AttrStatus::kInvalid, lt::set_attr(d, attr::CUBLASLT_MATMUL_DESC_TRANSA, &i64, sizeof i64));
  EXPECT_EQ(lt::AttrStatus::kOk, lt::set_attr(d, attr::CUBLASLT_MATMUL_DESC_TRANSA, &i32, sizeof i32));
  EXPECT_EQ(lt::AttrStatus::kInvalid, lt::set_attr(d, 9, &i32, sizeof i32));  // no attribute 9
  EXPECT_EQ(lt::AttrStatus::kInvalid, lt::set_attr(d, attr::CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4));
  // Removed in cuBLASLt 13: refused, not stored.
  EXPECT_EQ(lt::AttrStatus::kRefused,
            lt::set_attr(d, attr::CUBLASLT_MATMUL_DESC_ATOMIC_SYNC_NUM_CHUNKS_D_ROWS, &i32, sizeof i32));
  EXPECT_EQ(nullptr, lt::refused_attr(d));
  size_t written = 0;
  EXPECT_EQ(lt::AttrStatus::kOk, lt::get_attr(d, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, &written));
  EXPECT_EQ(8u, written);
  EXPECT_EQ(lt::AttrStatus::kInvalid, lt::get_attr(d, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, nullptr));
  int32_t type = 0;
  EXPECT_EQ(lt::AttrStatus::kOk, lt::get_attr(d, attr::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, 4, &written));
  EXPECT_EQ(-1, type);  // the default, sign-kept
  uint32_t epilogue = 0;
  EXPECT_EQ(lt::AttrStatus::kInvalid, lt::get_attr(d, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, 8, nullptr));
  EXPECT_EQ(lt::AttrStatus::kOk, lt::get_attr(d, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, 4, nullptr));
  EXPECT_EQ(uint32_t{CUBLASLT_EPILOGUE_DEFAULT}, epilogue);
  lt::Desc p = bag(attr::kPreference);
  uint32_t align = 0;
  EXPECT_EQ(lt::AttrStatus::kOk, lt::get_attr(p, attr::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, 4, nullptr));
  EXPECT_EQ(256u, align);
  lt::Desc l = bag(attr::kLayout);
  int32_t batch = 0;
  EXPECT_EQ(lt::AttrStatus::kOk, lt::get_attr(l, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4, nullptr));
  EXPECT_EQ(1, batch);
}

TEST(LtDesc, TheTableIsCublasLtHeaders) {
  // The generated values are the header's enumerators (the X-table is what
  // both sides read).
  EXPECT_EQ(uint32_t{CUBLASLT_MATMUL_DESC_BIAS_POINTER}, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  EXPECT_EQ(uint32_t{CUBLASLT_MATRIX_LAYOUT_BATCH_MODE}, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_MODE);
  EXPECT_EQ(uint32_t{CUBLASLT_MATMUL_PREF_IMPL_MASK}, attr::CUBLASLT_MATMUL_PREF_IMPL_MASK);
  EXPECT_EQ(uint64_t{CUBLASLT_EPILOGUE_DEFAULT}, lt::find_attr(attr::kMatmul, attr::CUBLASLT_MATMUL_DESC_EPILOGUE)->fallback);
  EXPECT_EQ(uint64_t{CUBLAS_FILL_MODE_FULL}, lt::find_attr(attr::kMatmul, attr::CUBLASLT_MATMUL_DESC_FILL_MODE)->fallback);
  EXPECT_EQ(uint64_t{CUBLASLT_REDUCTION_SCHEME_MASK},
            lt::find_attr(attr::kPreference, attr::CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK)->fallback);
  for (uint32_t id = 27; id <= 30; ++id) EXPECT_TRUE(lt::find_attr(attr::kMatmul, id)->refused) << id;
}

TEST(LtDesc, OneEncodingPerBag) {
  lt::Desc d = layout(3, 4, 5);
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{2});
  put(d, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{-2});
  ArgWriter w;
  lt::write(w, d);
  lt::Desc back;
  ArgReader r(view(w.bytes()));
  ASSERT_TRUE(lt::read(r, attr::kLayout, &back));
  EXPECT_TRUE(r.finish());
  EXPECT_EQ(d.set, back.set);
  EXPECT_EQ(-2, lt::signed_value(back, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET));
  EXPECT_EQ(kNoExtent, rgpu_lt_matrix_bytes(back));  // a batch at a negative stride is not sized
  ArgReader other(view(w.bytes()));
  EXPECT_FALSE(lt::read(other, attr::kMatmul, &back));  // another kind
  // An unknown attribute, and an int32 whose item is no sign extension.
  for (auto [set, value] : {std::pair<uint64_t, uint64_t>{1ull << 9, 0}, {1ull << 5, 0x100000000ull}}) {
    ArgWriter bad;
    bad.u64(attr::kLayout);
    bad.u64(set);
    bad.u64(value);
    ArgReader rb(view(bad.bytes()));
    EXPECT_FALSE(lt::read(rb, attr::kLayout, &back));
    EXPECT_TRUE(rb.failed());
  }
}

TEST(LtDesc, LayoutExtents) {
  EXPECT_EQ(uint64_t{(3 * 5 + 3) * 4}, rgpu_lt_matrix_bytes(layout(3, 4, 5)));  // column-major
  lt::Desc row = layout(3, 4, 6);
  put(row, attr::CUBLASLT_MATRIX_LAYOUT_ORDER, int32_t{CUBLASLT_ORDER_ROW});
  EXPECT_EQ(uint64_t{(2 * 6 + 4) * 4}, rgpu_lt_matrix_bytes(row));
  lt::Desc batch = layout(3, 4, 5);
  put(batch, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{3});
  put(batch, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{100});
  EXPECT_EQ(uint64_t{(200 + 18) * 4}, rgpu_lt_matrix_bytes(batch));
  EXPECT_EQ(kNoExtent, rgpu_lt_matrix_bytes(layout(3, 4, 2)));  // ld below the rows
}

TEST_F(LtRows, MatmulRebuildsTheDescriptorsAndRuns) {
  cublasLtMatmulAlgo_t algo{};
  algo.data[3] = 0xabcdef;
  InvokeOutcome out = run(ltc::k_cublasLtMatmul, matmul(handle, &algo));
  ASSERT_EQ(0u, out.code) << out.message;
  ASSERT_EQ(1, g_lt.matmuls);
  EXPECT_EQ(reinterpret_cast<cublasLtHandle_t>(&g_lt_object), g_lt.handle);
  EXPECT_EQ(1.5f, g_lt.alpha);
  EXPECT_EQ(reinterpret_cast<const void*>(a), g_lt.a);
  EXPECT_EQ(reinterpret_cast<void*>(d), g_lt.d);
  EXPECT_TRUE(g_lt.algo_seen);
  EXPECT_EQ(0xabcdefu, g_lt.algo_word);  // the algo travels verbatim
  const auto* rebuilt = reinterpret_cast<FakeDesc*>(g_lt.op);
  EXPECT_EQ(bias, rebuilt->set.at(attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER));
  EXPECT_EQ(uint64_t{CUBLASLT_EPILOGUE_RELU_BIAS}, rebuilt->set.at(attr::CUBLASLT_MATMUL_DESC_EPILOGUE));
  EXPECT_EQ(8u, reinterpret_cast<FakeDesc*>(g_lt.layouts[3])->set.at(attr::CUBLASLT_MATRIX_LAYOUT_ROWS));
  // Every rebuilt descriptor is destroyed when the row returns.
  ASSERT_EQ(5u, g_lt.made.size());
  for (FakeDesc* f : g_lt.made) EXPECT_TRUE(f->destroyed);
}

TEST_F(LtRows, ACublasHandleIsACublasLtHandle) {
  int cublas_object = 0;
  const uint64_t blas = protocol::make_handle(kCublasKind, 0x920);
  env.put(kCublasKind, blas, &cublas_object);
  ASSERT_EQ(0u, run(ltc::k_cublasLtMatmul, matmul(blas)).code);
  EXPECT_EQ(reinterpret_cast<cublasLtHandle_t>(&cublas_object), g_lt.handle);
  // ... but cublasLtDestroy takes only its own.
  ArgWriter w;
  ltc::pack_cublasLtDestroy(w, blas);
  EXPECT_EQ(kInvalid, run(ltc::k_cublasLtDestroy, w).code);
  EXPECT_EQ(&cublas_object, env.find(kCublasKind, blas));
}

TEST_F(LtRows, ForgedDestroyedAndWrongKindHandlesAreRefused) {
  EXPECT_EQ(kInvalid, run(ltc::k_cublasLtMatmul, matmul(protocol::make_handle(kLtKind, 0x999))).code);
  EXPECT_EQ(kInvalid, run(ltc::k_cublasLtMatmul, matmul(protocol::make_handle(protocol::HandleKind::kStream, 1))).code);
  ArgWriter w;
  ltc::pack_cublasLtDestroy(w, handle);
  EXPECT_EQ(0u, run(ltc::k_cublasLtDestroy, w).code);
  EXPECT_EQ(1, g_lt.destroyed);
  EXPECT_EQ(kInvalid, run(ltc::k_cublasLtMatmul, matmul(handle)).code);
  EXPECT_EQ(0, g_lt.matmuls);
}

TEST_F(LtRows, MatricesBiasAndScalesAreCheckedForTheirExtent) {
  dl = layout(9, 8, 9);  // D one row and a column past its allocation
  EXPECT_EQ(kInvalid, matmul_code());
  dl = layout(8, 8, 8);
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{2});  // a second matrix past it
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{64});
  EXPECT_EQ(kInvalid, matmul_code());
  dl = layout(8, 8, 8);
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias + 4);  // 8 floats from the 2nd: one past
  EXPECT_EQ(kInvalid, matmul_code());
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, uint64_t{0});  // a bias epilogue without a bias
  EXPECT_EQ(kInvalid, matmul_code());
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t{CUDA_R_64F});  // twice as long as its allocation
  EXPECT_EQ(kInvalid, matmul_code());
  put(op, attr::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t{CUDA_R_16F});
  EXPECT_EQ(0u, matmul_code());
  put(op, attr::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, uint64_t{0x1000});  // not the session's
  EXPECT_EQ(kInvalid, matmul_code());
  put(op, attr::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, bias);
  put(op, attr::CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, bias + 8 * 4);  // just past the end
  EXPECT_EQ(kInvalid, matmul_code());
  EXPECT_EQ(1, g_lt.matmuls);
}

TEST_F(LtRows, DeviceAlphaFollowsTheDescriptorsPointerMode) {
  put(op, attr::CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t{CUBLASLT_POINTER_MODE_DEVICE});
  ArgWriter w;
  ltc::pack_cublasLtMatmul(w, handle, &op, reinterpret_cast<const void*>(bias), 1, a, &al, a, &al,
                           reinterpret_cast<const void*>(bias), 1, d, &dl, d, &dl, nullptr, 0, 0,
                           protocol::kNullStream);
  EXPECT_EQ(0u, run(ltc::k_cublasLtMatmul, w).code);
  // Packed as host values while the descriptor says device: refused.
  EXPECT_EQ(kInvalid, matmul_code());
  ArgWriter foreign;
  ltc::pack_cublasLtMatmul(foreign, handle, &op, reinterpret_cast<const void*>(0x1000), 1, a, &al, a, &al,
                           reinterpret_cast<const void*>(bias), 1, d, &dl, d, &dl, nullptr, 0, 0,
                           protocol::kNullStream);
  EXPECT_EQ(kInvalid, run(ltc::k_cublasLtMatmul, foreign).code);
  EXPECT_EQ(1, g_lt.matmuls);
}

TEST_F(LtRows, WhatRgpudDoesNotCheckIsNotSupported) {
  const lt::Desc good_op = op, good_dl = dl;
  // A pointer-array batch, an order other than column or row, planar complex.
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, uint32_t{CUBLASLT_BATCH_MODE_POINTER_ARRAY});
  EXPECT_EQ(kNotSupported, matmul_code());
  dl = good_dl;
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_ORDER, int32_t{CUBLASLT_ORDER_COL32});
  EXPECT_EQ(kNotSupported, matmul_code());
  dl = good_dl;
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, int64_t{16});
  EXPECT_EQ(kNotSupported, matmul_code());
  dl = good_dl;
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{2});
  put(dl, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{-64});
  EXPECT_EQ(kNotSupported, matmul_code());
  dl = good_dl;
  // An epilogue with an auxiliary output, a vector pointer mode, block scales.
  put(op, attr::CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_GELU_AUX_BIAS});
  EXPECT_EQ(kNotSupported, matmul_code());
  op = good_op;
  put(op, attr::CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t{CUBLASLT_POINTER_MODE_DEVICE_VECTOR});
  EXPECT_EQ(kNotSupported, matmul_code());
  op = good_op;
  put(op, attr::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32_t{1});
  EXPECT_EQ(kNotSupported, matmul_code());
  // A refused attribute forged into the bag (the client never sets one):
  // cuBLASLt 12's atomic-sync counters, the epilogue's aux pointer.
  for (uint32_t id : {attr::CUBLASLT_MATMUL_DESC_ATOMIC_SYNC_NUM_CHUNKS_D_ROWS,
                      attr::CUBLASLT_MATMUL_DESC_ATOMIC_SYNC_IN_COUNTERS_POINTER,
                      attr::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER}) {
    op = good_op;
    op.set |= uint64_t{1} << id;
    op.values[id] = 0;
    EXPECT_EQ(kNotSupported, matmul_code()) << id;
  }
  op = good_op;
  EXPECT_EQ(0u, matmul_code());
  EXPECT_EQ(1, g_lt.matmuls);
}

TEST_F(LtRows, EveryTruncationIsRefused) {
  ArgWriter w = matmul(handle);
  const std::vector<std::byte>& all = w.bytes();
  const DispatchRow* row = find_row(wire::Api::CUBLAS_LT, ltc::k_cublasLtMatmul);
  for (size_t n = 0; n < all.size(); ++n) {
    EXPECT_EQ(kInvalid, row->run(env, std::span<const std::byte>(all.data(), n)).code) << n;
  }
  std::vector<std::byte> longer = all;
  longer.resize(all.size() + 8);
  EXPECT_EQ(kInvalid, row->run(env, view(longer)).code);
  EXPECT_EQ(0, g_lt.matmuls);
}

TEST_F(LtRows, HeuristicResultsComeBackInTheReply) {
  const lt::Desc pref = bag(attr::kPreference);
  cublasLtMatmulHeuristicResult_t results[2] = {};
  int returned = 0;
  ArgWriter w;
  ltc::pack_cublasLtMatmulAlgoGetHeuristic(w, handle, &op, &al, &al, &dl, &dl, &pref, 2, results, &returned);
  InvokeOutcome out = run(ltc::k_cublasLtMatmulAlgoGetHeuristic, w);
  ASSERT_EQ(0u, out.code) << out.message;
  ArgReader r(view(out.out));
  ASSERT_TRUE(ltc::unpack_cublasLtMatmulAlgoGetHeuristic(r, handle, &op, &al, &al, &dl, &dl, &pref, 2, results,
                                                          &returned));
  EXPECT_EQ(1, returned);
  EXPECT_EQ(0x1234u, results[0].algo.data[0]);
  EXPECT_EQ(0x5678u, results[0].algo.data[7]);
  EXPECT_EQ(4096u, results[0].workspaceSize);
  // A negative count, or more results than a reply carries.
  for (int count : {-1, 100000}) {
    ArgWriter bad;
    ltc::pack_cublasLtMatmulAlgoGetHeuristic(bad, handle, &op, &al, &al, &dl, &dl, &pref, count, results, &returned);
    EXPECT_EQ(kInvalid, run(ltc::k_cublasLtMatmulAlgoGetHeuristic, bad).code) << count;
  }
  EXPECT_EQ(1, g_lt.heuristics);
}

TEST_F(LtRows, TheLibrarysRefusalOfADescriptorIsItsStatus) {
  g_lt.set_status = CUBLAS_STATUS_INVALID_VALUE;
  EXPECT_EQ(kInvalid, matmul_code());
  for (FakeDesc* f : g_lt.made) EXPECT_TRUE(f->destroyed);
  g_lt.set_status = CUBLAS_STATUS_SUCCESS;
  table.cublasLtMatrixLayoutCreate = nullptr;
  EXPECT_EQ(kNotSupported, matmul_code());
  env.set_library(CublasLtTable::kIndex, nullptr);
  EXPECT_EQ(kNotSupported, matmul_code());
  EXPECT_EQ(0, g_lt.matmuls);
}

}  // namespace
}  // namespace rgpu::server::apigen_test
