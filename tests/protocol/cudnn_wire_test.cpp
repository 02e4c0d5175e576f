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

}  // namespace
}  // namespace rgpu::protocol::cudnn
