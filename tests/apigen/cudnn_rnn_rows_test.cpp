// cuDNN's RNN rows (server/src/cudnn_rnn_rows.cpp) against a fake session
// and a fake cuDNN table: a forward reaches the library only with every
// sequence and state operand inside the session's memory for the extent its
// descriptor gives, and the weight space and reserve at least as large as
// the library asks; descriptors that disagree are refused before it.
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

struct FakeRnn {
  int forwards = 0, made = 0, destroyed = 0;
  size_t weights = 2048, reserve = 1024;
};
FakeRnn g_rnn;
int g_handle;
char g_objects[64];

cudnnStatus_t create(cudnnHandle_t* h) {
  *h = reinterpret_cast<cudnnHandle_t>(&g_handle);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t destroy(cudnnHandle_t) { return CUDNN_STATUS_SUCCESS; }
template <class T>
cudnnStatus_t make(T* out) {
  *out = reinterpret_cast<T>(&g_objects[g_rnn.made++ % sizeof g_objects]);
  return CUDNN_STATUS_SUCCESS;
}
template <class T>
cudnnStatus_t unmake(T) {
  ++g_rnn.destroyed;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_dropout(cudnnDropoutDescriptor_t, cudnnHandle_t, float, void*, size_t, unsigned long long) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_rnn(cudnnRNNDescriptor_t, cudnnRNNAlgo_t, cudnnRNNMode_t, cudnnRNNBiasMode_t, cudnnDirectionMode_t,
                      cudnnRNNInputMode_t, cudnnDataType_t, cudnnDataType_t, cudnnMathType_t, int32_t, int32_t,
                      int32_t, int32_t, cudnnDropoutDescriptor_t, uint32_t) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_data(cudnnRNNDataDescriptor_t, cudnnDataType_t, cudnnRNNDataLayout_t, int, int, int, const int*,
                       void*) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_tensor(cudnnTensorDescriptor_t, cudnnDataType_t, int, const int*, const int*) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t weight_space(cudnnHandle_t, cudnnRNNDescriptor_t, size_t* n) {
  *n = g_rnn.weights;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t temp_sizes(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnForwardMode_t mode, cudnnRNNDataDescriptor_t,
                         size_t* work, size_t* reserve) {
  *work = 0;
  *reserve = mode == CUDNN_FWD_MODE_TRAINING ? g_rnn.reserve : 0;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t forward(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnForwardMode_t, const int32_t*,
                      cudnnRNNDataDescriptor_t, const void*, cudnnRNNDataDescriptor_t, void*, cudnnTensorDescriptor_t,
                      const void*, void*, cudnnTensorDescriptor_t, const void*, void*, size_t, const void*, size_t,
                      void*, size_t, void*) {
  ++g_rnn.forwards;
  return CUDNN_STATUS_SUCCESS;
}

// An LSTM of input 4, hidden 8, one layer, over 3 steps of a batch of 2:
// x is 3*2*4 floats (96 bytes), y 3*2*8 (192), hx/cx 2*8 (64).
struct Forward {
  cw::RnnDesc r;
  cw::RnnData x, y;
  cw::LegacyTensor h{CUDNN_DATA_FLOAT, 3, {1, 2, 8}, {16, 8, 1}};
  uint64_t xp = 0, yp = 0, hx = 0, hy = 0, cx = 0, cy = 0, w_n = 0, w = 0, rs_n = 0, rs = 0;
  Forward() {
    r.cell = CUDNN_LSTM, r.bias = CUDNN_RNN_DOUBLE_BIAS, r.dtype = r.math_prec = CUDNN_DATA_FLOAT;
    r.input = 4, r.hidden = r.proj = 8, r.layers = 1;
    x.dtype = CUDNN_DATA_FLOAT, x.max_seq = 3, x.batch = 2, x.vector = 4, x.lens = {3, 3};
    y = x;
    y.vector = 8;
  }
  void write(ArgWriter& wr, uint64_t handle) const {
    wr.u64(handle);
    cw::write_rnn(wr, r);
    wr.scalar(uint32_t(CUDNN_FWD_MODE_TRAINING));
    wr.u64(0);
    cw::write_rnn_data(wr, x), wr.u64(xp);
    cw::write_rnn_data(wr, y), wr.u64(yp);
    cw::write_tensor(wr, h);
    wr.scalar(uint32_t(1));
    cw::write_tensor(wr, h);
    wr.u64(hx), wr.u64(hy), wr.u64(cx), wr.u64(cy);
    wr.u64(w_n), wr.u64(w), wr.u64(0), wr.u64(0), wr.u64(rs_n), wr.u64(rs);
  }
};

class CudnnRnnRows : public ::testing::Test {
 protected:
  void SetUp() override {
    g_rnn = FakeRnn{};
    table.cudnnCreate = create;
    table.cudnnDestroy = destroy;
    table.cudnnCreateDropoutDescriptor = make<cudnnDropoutDescriptor_t>;
    table.cudnnDestroyDropoutDescriptor = unmake<cudnnDropoutDescriptor_t>;
    table.cudnnSetDropoutDescriptor = set_dropout;
    table.cudnnRestoreDropoutDescriptor = set_dropout;
    table.cudnnCreateRNNDescriptor = make<cudnnRNNDescriptor_t>;
    table.cudnnDestroyRNNDescriptor = unmake<cudnnRNNDescriptor_t>;
    table.cudnnSetRNNDescriptor_v8 = set_rnn;
    table.cudnnCreateRNNDataDescriptor = make<cudnnRNNDataDescriptor_t>;
    table.cudnnDestroyRNNDataDescriptor = unmake<cudnnRNNDataDescriptor_t>;
    table.cudnnSetRNNDataDescriptor = set_data;
    table.cudnnCreateTensorDescriptor = make<cudnnTensorDescriptor_t>;
    table.cudnnDestroyTensorDescriptor = unmake<cudnnTensorDescriptor_t>;
    table.cudnnSetTensorNdDescriptor = set_tensor;
    table.cudnnGetRNNWeightSpaceSize = weight_space;
    table.cudnnGetRNNTempSpaceSizes = temp_sizes;
    table.cudnnRNNForward = forward;
    env.set_library(CudnnTable::kIndex, &table);
    ArgWriter w;
    apigen::cudnn::pack_cudnnCreate(w, handle);
    ASSERT_EQ(0u, run(apigen::cudnn::k_cudnnCreate, w).code);
    f.xp = env.allocate(96), f.yp = env.allocate(192);
    f.hx = env.allocate(64), f.hy = env.allocate(64), f.cx = env.allocate(64), f.cy = env.allocate(64);
    f.w_n = g_rnn.weights, f.w = env.allocate(g_rnn.weights);
    f.rs_n = g_rnn.reserve, f.rs = env.allocate(g_rnn.reserve);
  }

  InvokeOutcome run(uint32_t function, const ArgWriter& w) {
    const DispatchRow* row = find_row(wire::Api::CUDNN, function);
    EXPECT_NE(nullptr, row) << function;
    return row ? row->run(env, {w.bytes().data(), w.bytes().size()}) : InvokeOutcome{};
  }
  uint32_t forward_code(const Forward& fw) {
    ArgWriter w;
    fw.write(w, handle);
    return run(cw::kRnnForward, w).code;
  }

  CudnnTable table;
  FakeEnv env{fake_driver()};
  const uint64_t handle = protocol::make_handle(kHandleKind, 0x910);
  Forward f;
};

TEST_F(CudnnRnnRows, ForwardWithOperandsInMemoryReachesTheLibrary) {
  EXPECT_EQ(0u, forward_code(f));
  EXPECT_EQ(1, g_rnn.forwards);
  Forward g = f;  // states described in 5-D, as PyTorch does
  g.h = cw::LegacyTensor{CUDNN_DATA_FLOAT, 5, {1, 2, 8, 1, 1}, {16, 8, 1, 1, 1}};
  EXPECT_EQ(0u, forward_code(g));
  EXPECT_EQ(2, g_rnn.forwards);
  g.h.dims[4] = 2;
  EXPECT_EQ(uint32_t(CUDNN_STATUS_BAD_PARAM), forward_code(g));
  EXPECT_EQ(2, g_rnn.forwards);
  EXPECT_EQ(g_rnn.made, g_rnn.destroyed);  // the call's descriptors went with it
}

TEST_F(CudnnRnnRows, ForwardWithABufferTooSmallIsRefused) {
  const uint32_t bad = CUDNN_STATUS_BAD_PARAM;
  Forward g = f;
  g.yp = f.yp + 4;  // y's last 4 bytes past its allocation
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.hy = f.hy + 8;
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.w_n = g_rnn.weights - 4;  // smaller than the library's weight space
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.rs_n = g_rnn.reserve - 4;  // a training forward's reserve too small
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.rs = f.rs + 8;  // the reserve past its allocation
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.x.max_seq = 4, g.x.lens = {4, 4}, g.y.max_seq = 4, g.y.lens = {4, 4};  // 4 steps: x and y outgrow theirs
  EXPECT_EQ(bad, forward_code(g));
  EXPECT_EQ(0, g_rnn.forwards);
}

TEST_F(CudnnRnnRows, DescriptorsThatDisagreeAreRefusedBeforeTheLibrary) {
  const uint32_t bad = CUDNN_STATUS_BAD_PARAM;
  Forward g = f;
  g.y.vector = 4;  // not the output size
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.h.strides[0] = 0;  // a state tensor that is not packed
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.y.lens = {3, 2};
  EXPECT_EQ(bad, forward_code(g));
  g = f;
  g.r.layers = cw::kMaxRnnLayers + 1;  // out of bounds: undecodable
  EXPECT_EQ(bad, forward_code(g));
  EXPECT_EQ(0, g_rnn.forwards);
  EXPECT_EQ(0, g_rnn.made);
}

}  // namespace
}  // namespace rgpu::server::apigen_test
