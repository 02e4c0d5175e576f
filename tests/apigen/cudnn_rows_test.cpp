// cuDNN's hand-written rows (server/src/cudnn_rows.cpp) against a fake
// session and a fake cuDNN table: a plan is rebuilt from its graph and kept;
// an execute reaches the library only with every tensor of the plan inside
// the session's memory for its extent, and the workspace for the plan's
// size; a destroyed plan is gone; batch norm's operands are checked alike.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../../protocol/generated/cudnn_pack.h"
#include "dispatch.h"
#include "fakes.h"
#include "library_tables.h"
#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::server::apigen_test {
namespace {

namespace cw = protocol::cudnn;
using protocol::ArgWriter;
constexpr auto kHandleKind = static_cast<protocol::HandleKind>(cw::kHandleKind);
constexpr auto kPlanKind = static_cast<protocol::HandleKind>(cw::kPlanKind);

struct FakeCudnn {
  int created = 0, destroyed = 0, finalized = 0, executed = 0, bn = 0;
  std::vector<void*> pointers;  // the last execute's
  int64_t workspace = 256;
};
FakeCudnn g_dnn;
int g_handle_object;
char g_descs[4096];

cudnnStatus_t fake_create(cudnnHandle_t* h) {
  *h = reinterpret_cast<cudnnHandle_t>(&g_handle_object);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_destroy(cudnnHandle_t) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t fake_bcreate(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t* d) {
  *d = &g_descs[g_dnn.created++ % sizeof g_descs];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_bdestroy(cudnnBackendDescriptor_t) {
  ++g_dnn.destroyed;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_set(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t,
                       int64_t n, const void* v) {
  if (name == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS) {
    auto* p = static_cast<void* const*>(v);
    g_dnn.pointers.assign(p, p + n);
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_get(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t,
                       int64_t, int64_t* count, void* out) {
  if (name != CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) return CUDNN_STATUS_NOT_SUPPORTED;
  *count = 1;
  std::memcpy(out, &g_dnn.workspace, 8);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_finalize(cudnnBackendDescriptor_t) {
  ++g_dnn.finalized;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t fake_execute(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t) {
  ++g_dnn.executed;
  return CUDNN_STATUS_SUCCESS;
}

cw::Attr int64s(uint32_t name, std::vector<int64_t> v) {
  cw::Attr a;
  a.name = name;
  a.type = CUDNN_TYPE_INT64;
  a.count = int64_t(v.size());
  a.data.resize(v.size() * 8);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

// A plan over two float tensors of 2x3x4x4 (384 bytes), uids 1 and 2.
cw::Graph plan_graph() {
  cw::Graph g;
  for (int64_t uid : {1, 2}) {
    cw::Node t;
    t.type = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
    cw::Attr dtype;
    dtype.name = CUDNN_ATTR_TENSOR_DATA_TYPE;
    dtype.type = CUDNN_TYPE_DATA_TYPE;
    dtype.count = 1;
    dtype.data.resize(4);  // CUDNN_DATA_FLOAT
    t.attrs = {dtype, int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, {2, 3, 4, 4}),
               int64s(CUDNN_ATTR_TENSOR_STRIDES, {48, 16, 4, 1}), int64s(CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid})};
    g.push_back(t);
  }
  cw::Node plan;
  plan.type = CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
  cw::Attr h;
  h.name = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
  h.type = CUDNN_TYPE_HANDLE;
  h.count = 1;
  cw::Attr refs;  // stands in for the engine config: refers to both tensors
  refs.name = CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG;
  refs.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  refs.count = 2;
  refs.refs = {0, 1};
  plan.attrs = {h, refs};
  g.push_back(plan);
  return g;
}

class CudnnRows : public ::testing::Test {
 protected:
  void SetUp() override {
    g_dnn = FakeCudnn{};
    table.cudnnCreate = fake_create;
    table.cudnnDestroy = fake_destroy;
    table.cudnnBackendCreateDescriptor = fake_bcreate;
    table.cudnnBackendDestroyDescriptor = fake_bdestroy;
    table.cudnnBackendSetAttribute = fake_set;
    table.cudnnBackendGetAttribute = fake_get;
    table.cudnnBackendFinalize = fake_finalize;
    table.cudnnBackendExecute = fake_execute;
    env.set_library(CudnnTable::kIndex, &table);
    a = env.allocate(384);
    b = env.allocate(384);
    ws = env.allocate(256);
    ArgWriter w;
    apigen::cudnn::pack_cudnnCreate(w, handle);
    ASSERT_EQ(0u, run(apigen::cudnn::k_cudnnCreate, w).code);
  }

  InvokeOutcome run(uint32_t function, const ArgWriter& w) {
    const DispatchRow* row = find_row(wire::Api::CUDNN, function);
    EXPECT_NE(nullptr, row) << function;
    return row ? row->run(env, {w.bytes().data(), w.bytes().size()}) : InvokeOutcome{};
  }

  InvokeOutcome create_plan(const cw::Graph& g) {
    ArgWriter w;
    w.u64(handle);
    w.u64(plan);
    cw::write_graph(w, g);
    return run(cw::kPlanCreate, w);
  }

  InvokeOutcome execute(std::vector<std::pair<int64_t, uint64_t>> pack, uint64_t workspace) {
    ArgWriter w;
    w.u64(handle);
    w.u64(plan);
    w.u64(pack.size());
    for (auto [uid, p] : pack) {
      w.scalar(uid);
      w.u64(p);
    }
    w.u64(workspace);
    return run(cw::kPlanExecute, w);
  }

  CudnnTable table;
  FakeEnv env{fake_driver()};
  const uint64_t handle = protocol::make_handle(kHandleKind, 0x900);
  const uint64_t plan = protocol::make_handle(kPlanKind, 0x901);
  uint64_t a = 0, b = 0, ws = 0;
};

TEST_F(CudnnRows, PlanIsBuiltFromItsGraphAndExecutesWithCheckedPointers) {
  InvokeOutcome out = create_plan(plan_graph());
  ASSERT_EQ(0u, out.code) << out.message;
  protocol::ArgReader rd({out.out.data(), out.out.size()});
  int64_t workspace = 0;
  ASSERT_TRUE(rd.scalar(&workspace) && rd.finish());
  EXPECT_EQ(256, workspace);
  EXPECT_EQ(3, g_dnn.finalized);  // every node, in order
  EXPECT_NE(nullptr, env.find(kPlanKind, plan));

  out = execute({{1, a}, {2, b}}, ws);
  ASSERT_EQ(0u, out.code) << out.message;
  EXPECT_EQ(1, g_dnn.executed);
  ASSERT_EQ(2u, g_dnn.pointers.size());
  EXPECT_EQ(reinterpret_cast<void*>(a), g_dnn.pointers[0]);

  const uint32_t bad = CUDNN_STATUS_BAD_PARAM;
  EXPECT_EQ(bad, execute({{1, a}, {2, b + 8}}, ws).code);  // 8 bytes past b's allocation
  EXPECT_EQ(bad, execute({{1, a}}, ws).code);               // tensor 2 missing
  EXPECT_EQ(bad, execute({{1, a}, {2, b}}, ws + 8).code);   // the workspace too short
  EXPECT_EQ(bad, execute({{1, a}, {2, b}}, 0).code);        // no workspace, the plan needs one
  EXPECT_EQ(1, g_dnn.executed);

  ArgWriter w;
  w.u64(plan);
  const int destroyed = g_dnn.destroyed;
  ASSERT_EQ(0u, run(cw::kPlanDestroy, w).code);
  EXPECT_EQ(destroyed + 3, g_dnn.destroyed);  // the plan's descriptors, through the table
  EXPECT_EQ(nullptr, env.find(kPlanKind, plan));
  EXPECT_EQ(bad, execute({{1, a}, {2, b}}, ws).code);
}

TEST_F(CudnnRows, RefusesGraphsItDoesNotPassOn) {
  cw::Graph g = plan_graph();
  g[0].type = CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR;  // not a type PyTorch's convolutions use
  EXPECT_EQ(uint32_t(CUDNN_STATUS_NOT_SUPPORTED), create_plan(g).code);
  g = plan_graph();
  g.back().type = CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR;  // the root is no plan
  EXPECT_EQ(uint32_t(CUDNN_STATUS_BAD_PARAM), create_plan(g).code);
  EXPECT_EQ(0, g_dnn.finalized);
  EXPECT_EQ(nullptr, env.find(kPlanKind, plan));
}

TEST_F(CudnnRows, BatchNormChecksItsOperands) {
  // A forward inference over 2x3x4x4 floats whose y lies past its allocation.
  cw::LegacyTensor x{CUDNN_DATA_FLOAT, 4, {2, 3, 4, 4}, {48, 16, 4, 1}};
  cw::LegacyTensor p{CUDNN_DATA_FLOAT, 4, {1, 3, 1, 1}, {3, 1, 1, 1}};
  ArgWriter w;
  w.u64(handle);
  w.scalar(uint32_t(CUDNN_BATCHNORM_SPATIAL));
  w.scalar(1.0);
  w.scalar(0.0);
  cw::write_tensor(w, x);
  w.u64(a);
  cw::write_tensor(w, x);
  w.u64(b + 4);
  cw::write_tensor(w, p);
  for (int i = 0; i < 4; ++i) w.u64(ws);
  w.scalar(1e-5);
  EXPECT_EQ(uint32_t(CUDNN_STATUS_BAD_PARAM), run(cw::kBnForwardInference, w).code);
}

}  // namespace
}  // namespace rgpu::server::apigen_test
