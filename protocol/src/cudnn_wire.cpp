// cuDNN's descriptors on the wire (rgpu/protocol/cudnn_wire.h).
#include "rgpu/protocol/cudnn_wire.h"

#include <cstring>

namespace rgpu::protocol::cudnn {

uint32_t attr_elem_bytes(uint32_t type) {
  switch (type) {
    case 0:  // HANDLE
    case 6:  // VOID_PTR
    case 15: // BACKEND_DESCRIPTOR
      return 8;
    case 2:  // BOOLEAN (C++ bool)
    case 24: // CHAR
      return 1;
    case 3:  // INT64
    case 5:  // DOUBLE
      return 8;
    case 26: // FRACTION {int64 numerator, denominator}
      return 16;
    case 1: case 4: case 7: case 8: case 9: case 10: case 11: case 12: case 13: case 14: case 16: case 17:
    case 18: case 19: case 20: case 21: case 22: case 23: case 25: case 27: case 28: case 29: case 30:
      return 4;  // the enums, FLOAT, INT32
    default:
      return 0;
  }
}

const Attr* Node::find(uint32_t name) const {
  for (const Attr& a : attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool Node::scalar(uint32_t name, uint32_t bytes, int64_t* out) const {
  const Attr* a = find(name);
  if (!a || a->count < 1 || attr_elem_bytes(a->type) != bytes || a->data.size() < bytes) return false;
  int64_t v = 0;
  std::memcpy(&v, a->data.data(), bytes);
  if (bytes < 8 && (v >> (8 * bytes - 1)) & 1) v |= ~int64_t{0} << (8 * bytes);
  *out = v;
  return true;
}

void write_graph(ArgWriter& w, const Graph& g) {
  w.u64(g.size());
  for (const Node& n : g) {
    w.u64(n.type);
    w.u64(n.attrs.size());
    for (const Attr& a : n.attrs) {
      w.u64(a.name);
      w.u64(a.type);
      w.scalar(a.count);
      if (a.type == kTypeDescriptor) {
        for (uint32_t ref : a.refs) w.u64(ref);
      } else if (a.type != kTypeHandle) {
        w.buffer(a.data.data(), a.data.size());
      }
    }
  }
}

bool read_graph(ArgReader& r, Graph* g, const GraphLimits& limits) {
  uint64_t nodes = 0;
  if (!r.u64(&nodes) || nodes == 0 || nodes > limits.nodes) return r.reject();
  g->assign(nodes, Node{});
  for (uint64_t i = 0; i < nodes; ++i) {
    Node& n = (*g)[i];
    uint64_t type = 0, attrs = 0;
    if (!r.u64(&type) || !r.u64(&attrs) || type > 255 || attrs > limits.attrs) return r.reject();
    n.type = static_cast<uint32_t>(type);
    n.attrs.resize(attrs);
    for (Attr& a : n.attrs) {
      uint64_t name = 0, atype = 0;
      if (!r.u64(&name) || !r.u64(&atype) || !r.scalar(&a.count)) return false;
      if (name > 0xffff || a.count < 0 || a.count > limits.elements) return r.reject();
      a.name = static_cast<uint32_t>(name);
      a.type = static_cast<uint32_t>(atype);
      const uint32_t elem = attr_elem_bytes(a.type);
      if (elem == 0 || a.type == kTypeVoidPtr) return r.reject();
      if (a.type == kTypeDescriptor) {
        a.refs.resize(static_cast<size_t>(a.count));
        for (uint32_t& ref : a.refs) {
          uint64_t v = 0;
          if (!r.u64(&v) || v >= i) return r.reject();
          ref = static_cast<uint32_t>(v);
        }
      } else if (a.type == kTypeHandle) {
        if (a.count != 1) return r.reject();
      } else {
        std::span<const std::byte> b;
        if (!r.buffer(&b, uint64_t(limits.elements) * 16)) return false;
        if (b.size() != uint64_t(a.count) * elem) return r.reject();
        a.data.assign(b.begin(), b.end());
      }
    }
  }
  return !r.failed();
}

namespace {
// cuDNN 9's attribute names the tensor facts read.
constexpr uint32_t kTensorDataType = 901, kTensorDimensions = 902,
                   kTensorStrides = 903, kTensorUid = 906, kTensorIsVirtual = 907;
constexpr uint32_t kTensorDescriptor = 17;

bool int64s(const Node& n, uint32_t name, int64_t* out, int* nd) {
  const Attr* a = n.find(name);
  if (!a || a->type != 3 || a->count < 1 || a->count > 8) return false;
  std::memcpy(out, a->data.data(), a->data.size());
  *nd = static_cast<int>(a->count);
  return true;
}
}  // namespace

bool tensor_facts(const Node& n, TensorFacts* out) {
  if (n.type != kTensorDescriptor) return false;
  TensorFacts f;
  int nd_strides = 0;
  int64_t v = 0;
  if (!int64s(n, kTensorDimensions, f.dims, &f.nd) || !int64s(n, kTensorStrides, f.strides, &nd_strides) ||
      nd_strides != f.nd || !n.scalar(kTensorUid, 8, &f.uid) || !n.scalar(kTensorDataType, 4, &v)) {
    return false;
  }
  f.dtype = static_cast<int32_t>(v);
  const Attr* virt = n.find(kTensorIsVirtual);
  f.is_virtual = virt && virt->type == 2 && !virt->data.empty() && virt->data[0] != std::byte{0};
  *out = f;
  return true;
}

uint32_t dtype_bytes(int32_t dtype) {
  switch (dtype) {
    case 0: return 4;   // FLOAT
    case 1: return 8;   // DOUBLE
    case 2: return 2;   // HALF
    case 3: return 1;   // INT8
    case 4: return 4;   // INT32
    case 5: return 4;   // INT8x4
    case 6: return 1;   // UINT8
    case 7: return 4;   // UINT8x4
    case 8: return 32;  // INT8x32
    case 9: return 2;   // BFLOAT16
    case 10: return 8;  // INT64
    case 11: return 1;  // BOOLEAN
    case 12: return 1;  // FP8_E4M3
    case 13: return 1;  // FP8_E5M2
    default: return 0;
  }
}

uint64_t tensor_bytes(int32_t dtype, int nd, const int64_t* dims, const int64_t* strides) {
  const uint64_t elem = dtype_bytes(dtype);
  if (elem == 0 || nd < 1 || nd > 8) return kNoExtent;
  uint64_t last = 0;
  for (int i = 0; i < nd; ++i) {
    if (dims[i] < 0 || strides[i] < 0) return kNoExtent;
    if (dims[i] == 0) return 0;
    uint64_t step = rgpu_mul_extent(uint64_t(dims[i] - 1), uint64_t(strides[i]));
    if (step == kNoExtent || last > kNoExtent - 1 - step) return kNoExtent;
    last += step;
  }
  return rgpu_mul_extent(last + 1, elem);
}

void write_tensor(ArgWriter& w, const LegacyTensor& t) {
  w.scalar(t.dtype);
  w.scalar(t.nd);
  for (int i = 0; i < t.nd && i < 8; ++i) {
    w.scalar(t.dims[i]);
    w.scalar(t.strides[i]);
  }
}

bool read_tensor(ArgReader& r, LegacyTensor* t) {
  if (!r.scalar(&t->dtype) || !r.scalar(&t->nd)) return false;
  if (t->nd < 1 || t->nd > 8) return r.reject();
  for (int i = 0; i < t->nd; ++i) {
    if (!r.scalar(&t->dims[i]) || !r.scalar(&t->strides[i])) return false;
    if (t->dims[i] < 1 || t->strides[i] < 0) return r.reject();
  }
  return true;
}

uint64_t legacy_bytes(const LegacyTensor& t) {
  int64_t dims[8], strides[8];
  for (int i = 0; i < t.nd && i < 8; ++i) {
    dims[i] = t.dims[i];
    strides[i] = t.strides[i];
  }
  return tensor_bytes(t.dtype, t.nd, dims, strides);
}

}  // namespace rgpu::protocol::cudnn
