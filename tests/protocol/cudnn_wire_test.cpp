// cuDNN's descriptors on the wire (rgpu/protocol/cudnn_wire.h): a graph
// round-trips, and read_graph refuses what a peer must not send.
#include <gtest/gtest.h>

#include <cstring>

#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::protocol::cudnn {
namespace {

Attr int64s(uint32_t name, std::vector<int64_t> v) {
  Attr a;
  a.name = name;
  a.type = 3;  // INT64
  a.count = int64_t(v.size());
  a.data.resize(v.size() * 8);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

Attr int32(uint32_t name, uint32_t type, int32_t v) {
  Attr a;
  a.name = name;
  a.type = type;
  a.count = 1;
  a.data.resize(4);
  std::memcpy(a.data.data(), &v, 4);
  return a;
}

// A tensor node (CUDNN_BACKEND_TENSOR_DESCRIPTOR) and an operation graph
// that refers to it and to the call's handle.
Graph sample() {
  Node t;
  t.type = 17;
  t.attrs = {int32(901, 1, 0), int64s(902, {2, 3, 4, 5}), int64s(903, {60, 20, 5, 1}), int64s(906, {7})};
  Node g;
  g.type = 15;
  Attr handle;
  handle.name = 800;
  handle.type = kTypeHandle;
  handle.count = 1;
  Attr ops;
  ops.name = 801;
  ops.type = kTypeDescriptor;
  ops.count = 1;
  ops.refs = {0};
  g.attrs = {handle, ops};
  return {t, g};
}

std::vector<std::byte> encode(const Graph& g) {
  ArgWriter w;
  write_graph(w, g);
  return w.take();
}

TEST(CudnnWire, GraphRoundTrips) {
  auto bytes = encode(sample());
  ArgReader r(bytes);
  Graph back;
  ASSERT_TRUE(read_graph(r, &back));
  ASSERT_TRUE(r.finish());
  ASSERT_EQ(2u, back.size());
  EXPECT_EQ(15u, back[1].type);
  EXPECT_EQ(std::vector<uint32_t>{0}, back[1].find(801)->refs);
  TensorFacts f;
  ASSERT_TRUE(tensor_facts(back[0], &f));
  EXPECT_EQ(7, f.uid);
  EXPECT_EQ(4, f.nd);
  EXPECT_EQ((1 * 60 + 2 * 20 + 3 * 5 + 4 + 1) * 4u, tensor_bytes(f.dtype, f.nd, f.dims, f.strides));
}

TEST(CudnnWire, RefusesAReferenceToALaterNode) {
  Graph g = sample();
  std::swap(g[0], g[1]);  // the graph now refers forward, to node 1
  g[0].attrs[1].refs = {1};
  auto bytes = encode(g);
  ArgReader r(bytes);
  Graph back;
  EXPECT_FALSE(read_graph(r, &back));
}

TEST(CudnnWire, RefusesPointersUnknownTypesAndWrongLengths) {
  for (int variant = 0; variant < 3; ++variant) {
    Graph g = sample();
    if (variant == 0) g[0].attrs.push_back(int64s(1001, {0x1000}));
    if (variant == 0) g[0].attrs.back().type = kTypeVoidPtr;  // a device address outside a variant pack
    if (variant == 1) g[0].attrs[0].type = 99;                 // no such attribute type
    if (variant == 2) g[0].attrs[1].count = 3;                 // 4 dims sent, 3 announced
    auto bytes = encode(g);
    ArgReader r(bytes);
    Graph back;
    EXPECT_FALSE(read_graph(r, &back) && r.finish()) << "variant " << variant;
  }
}

TEST(CudnnWire, RefusesMoreThanTheLimits) {
  auto bytes = encode(sample());
  ArgReader r(bytes);
  Graph back;
  GraphLimits tight;
  tight.nodes = 1;
  EXPECT_FALSE(read_graph(r, &back, tight));
}

TEST(CudnnWire, SizesTensorsAndRefusesWhatItCannotSize) {
  const int64_t dims[2] = {3, 4}, strides[2] = {4, 1}, negative[2] = {-4, 1};
  EXPECT_EQ(48u, tensor_bytes(0, 2, dims, strides));
  EXPECT_EQ(24u, tensor_bytes(2, 2, dims, strides));  // half
  EXPECT_EQ(kNoExtent, tensor_bytes(0, 2, dims, negative));
  EXPECT_EQ(kNoExtent, tensor_bytes(99, 2, dims, strides));
  const int64_t huge[2] = {int64_t(1) << 40, int64_t(1) << 40}, big_strides[2] = {int64_t(1) << 40, 1};
  EXPECT_EQ(kNoExtent, tensor_bytes(0, 2, huge, big_strides));
}

TEST(CudnnWire, LegacyTensorRoundTripsAndIsChecked) {
  LegacyTensor t;
  t.dtype = 0;
  t.nd = 4;
  const int32_t dims[4] = {2, 3, 4, 5}, strides[4] = {60, 1, 15, 3};  // channels last
  std::memcpy(t.dims, dims, sizeof dims);
  std::memcpy(t.strides, strides, sizeof strides);
  ArgWriter w;
  write_tensor(w, t);
  auto bytes = w.take();
  ArgReader r(bytes);
  LegacyTensor back;
  ASSERT_TRUE(read_tensor(r, &back) && r.finish());
  EXPECT_EQ(legacy_bytes(t), legacy_bytes(back));
  EXPECT_EQ(120u * 4, legacy_bytes(back));
  t.dims[2] = 0;
  ArgWriter w2;
  write_tensor(w2, t);
  auto bad = w2.take();
  ArgReader r2(bad);
  EXPECT_FALSE(read_tensor(r2, &back));
}

RnnDesc lstm() {
  RnnDesc d;
  d.cell = 2, d.bias = 2, d.dir = 1, d.input = 5, d.hidden = 7, d.proj = 7, d.layers = 2;
  d.dropout = 0.25f, d.states = 0x7000, d.states_bytes = 64;
  return d;
}

TEST(CudnnRnnWire, DescriptorsRoundTrip) {
  ArgWriter w;
  write_rnn(w, lstm());
  RnnData x;
  x.dtype = 2, x.layout = 1, x.max_seq = 4, x.batch = 3, x.vector = 5, x.lens = {4, 2, 1};
  x.has_fill = true, x.fill = -1.5;
  write_rnn_data(w, x);
  ArgReader r(w.bytes());
  RnnDesc d;
  RnnData back;
  ASSERT_TRUE(read_rnn(r, &d));
  ASSERT_TRUE(read_rnn_data(r, &back));
  EXPECT_TRUE(r.finish());
  EXPECT_EQ(7, d.hidden);
  EXPECT_EQ(2, d.layers);
  EXPECT_EQ(0.25f, d.dropout);
  EXPECT_EQ(0x7000u, d.states);
  EXPECT_EQ(x.lens, back.lens);
  EXPECT_EQ(-1.5, back.fill);
  // Packed: the sum of the lengths' rows of 5 halves.
  EXPECT_EQ(uint64_t(7 * 5 * 2), rnn_data_bytes(back));
  back.layout = 0;
  EXPECT_EQ(uint64_t(4 * 3 * 5 * 2), rnn_data_bytes(back));
}

TEST(CudnnRnnWire, RefusesOutOfBoundDescriptors) {
  auto refused = [](const RnnDesc& d) {
    ArgWriter w;
    write_rnn(w, d);
    ArgReader r(w.bytes());
    RnnDesc back;
    return !read_rnn(r, &back);
  };
  EXPECT_FALSE(refused(lstm()));
  RnnDesc d = lstm();
  d.layers = kMaxRnnLayers + 1;
  EXPECT_TRUE(refused(d));
  d = lstm();
  d.hidden = kMaxRnnVector + 1;
  d.proj = 1;
  EXPECT_TRUE(refused(d));
  d = lstm();
  d.proj = 8;  // larger than hidden
  EXPECT_TRUE(refused(d));
  d = lstm();
  d.cell = 4;
  EXPECT_TRUE(refused(d));
  d = lstm();
  d.dropout = 1.0f;
  EXPECT_TRUE(refused(d));
  d = lstm();
  d.states = 0, d.states_bytes = 0;  // dropout without a state
  EXPECT_TRUE(refused(d));

  auto data_refused = [](const RnnData& x, size_t lens_bytes) {
    ArgWriter w;
    for (int32_t v : {x.dtype, x.layout, x.max_seq, x.batch, x.vector}) w.scalar(v);
    w.buffer(x.lens.data(), lens_bytes);
    w.scalar(uint32_t(0));
    w.scalar(0.0);
    ArgReader r(w.bytes());
    RnnData back;
    return !read_rnn_data(r, &back);
  };
  RnnData x;
  x.max_seq = 3, x.batch = 2, x.vector = 4, x.lens = {3, 1};
  EXPECT_FALSE(data_refused(x, 8));
  EXPECT_TRUE(data_refused(x, 4));  // fewer lengths than the batch
  EXPECT_TRUE(data_refused(x, 6));  // not whole int32s
  x.lens = {4, 1};                  // longer than max_seq
  EXPECT_TRUE(data_refused(x, 8));
  x.lens = {3, 1};
  x.max_seq = kMaxRnnSeq + 1;
  EXPECT_TRUE(data_refused(x, 8));
}

TEST(CudnnRnnWire, WeightParamsRoundTripAndAreBounded) {
  std::vector<WeightParam> p(2);
  p[0].lin = 0, p[0].has_matrix = true, p[0].matrix_offset = 64;
  p[0].matrix = LegacyTensor{0, 3, {1, 7, 5}, {35, 5, 1}};
  p[1].lin = 8, p[1].has_bias = true, p[1].bias_offset = 128;
  p[1].bias = LegacyTensor{0, 3, {1, 7, 1}, {7, 1, 1}};
  ArgWriter w;
  write_weight_params(w, p);
  ArgReader r(w.bytes());
  std::vector<WeightParam> back;
  ASSERT_TRUE(read_weight_params(r, &back));
  ASSERT_EQ(2u, back.size());
  EXPECT_EQ(64u, back[0].matrix_offset);
  EXPECT_EQ(7, back[0].matrix.dims[1]);
  EXPECT_FALSE(back[0].has_bias);
  EXPECT_EQ(128u, back[1].bias_offset);
  ArgWriter many;
  many.u64(kMaxWeightParams + 1);
  ArgReader r2(many.bytes());
  EXPECT_FALSE(read_weight_params(r2, &back));
}

}  // namespace
}  // namespace rgpu::protocol::cudnn
