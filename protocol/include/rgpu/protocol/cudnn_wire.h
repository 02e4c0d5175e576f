// cuDNN's descriptors as rgpu sends them. The client keeps every cuDNN
// descriptor (backend descriptors and the legacy tensor descriptor) as a
// local object; a call that needs the library (a plan's finalize, a
// heuristics query, an execute, a batch norm) sends what it uses whole, in
// one message: a backend descriptor and everything it refers to as a Graph,
// a legacy tensor descriptor as a LegacyTensor. rgpud checks them and
// rebuilds the library's own descriptors through its table
// (server/src/cudnn_*.cpp). Pure functions of their arguments
// (protocol/src/cudnn_wire.cpp).
//
// A Graph on the wire: the node count, then per node its descriptor type and
// attribute count, then per attribute its name, its attribute type, its
// element count and its elements: a descriptor-valued attribute's elements
// are indices of earlier nodes (so a graph has no cycles), a handle's are
// absent (the call's handle stands in), any other's are the raw bytes of
// count elements of the type's size. The last node is the root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rgpu/protocol/args.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::protocol::cudnn {

// The hand-written calls' ordinals (Call.invoke's function for api CUDNN),
// above the generated calls' (client-shim/api/cudnn.lock), which stay small.
enum Fn : uint32_t {
  kFirstHandFn = 1000,
  kHeuristics = 1001,       // sync: graph (root ENGINEHEUR) -> engine configs
  kGlobalCount = 1002,      // sync: graph (root OPERATIONGRAPH) -> its engine count
  kPlanCreate = 1003,       // sync: plan handle, graph (root EXECUTION_PLAN) -> workspace bytes
  kPlanDestroy = 1004,      // async: plan handle
  kPlanExecute = 1005,      // async: cuDNN handle, plan handle, variant pack
  kBnForwardTraining = 1006,
  kBnForwardInference = 1007,
  kBnBackward = 1008,
  kBnSizes = 1009,          // sync: the batch norm workspace/reserve sizes
  kVersion = 1010,          // sync, quick: the server library's version
  kLastHandFn = 1010,
};

// Handle kinds (protocol/handles.h's library kinds): cuDNN handles
// (cudnn.api's @handle) and execution plans, minted by the client when it
// finalizes one and kept by rgpud until the plan is destroyed.
inline constexpr uint8_t kHandleKind = 20;
inline constexpr uint8_t kPlanKind = 21;

// What one heuristics reply may list.
inline constexpr uint64_t kMaxEngineConfigs = 64;
inline constexpr uint64_t kMaxNotes = 16;
inline constexpr uint64_t kMaxKnobs = 64;
inline constexpr uint64_t kMaxVariantPack = 64;

// cudnnBackendAttributeType_t values the wire treats specially.
inline constexpr uint32_t kTypeHandle = 0;
inline constexpr uint32_t kTypeVoidPtr = 6;
inline constexpr uint32_t kTypeDescriptor = 15;

// Bytes of one element of backend attribute type `type` (cuDNN 9's
// cudnnBackendAttributeType_t); 0 for a type rgpu does not know.
uint32_t attr_elem_bytes(uint32_t type);

struct Attr {
  uint32_t name = 0;   // cudnnBackendAttributeName_t
  uint32_t type = 0;   // cudnnBackendAttributeType_t
  int64_t count = 0;   // elements
  std::vector<std::byte> data;   // count * attr_elem_bytes(type) bytes; empty for handles and descriptors
  std::vector<uint32_t> refs;    // descriptors: indices of earlier nodes
};

struct Node {
  uint32_t type = 0;  // cudnnBackendDescriptorType_t
  std::vector<Attr> attrs;
  const Attr* find(uint32_t name) const;
  // The first element of a scalar attribute of `bytes` bytes, little-endian,
  // sign-extended when `is_signed`; false when absent or of another size.
  bool scalar(uint32_t name, uint32_t bytes, int64_t* out) const;
};

using Graph = std::vector<Node>;

// What one Graph may hold; read_graph refuses more.
struct GraphLimits {
  size_t nodes = 512;
  size_t attrs = 64;           // per node
  int64_t elements = 4096;     // per attribute
};

void write_graph(ArgWriter& w, const Graph& g);
// Leaves `r` failed when the bytes are not a graph within `limits`: an
// unknown attribute type, a count that disagrees with the data, a reference
// to a node that is not earlier, a void pointer anywhere (device addresses
// travel only in a variant pack, where they are checked).
bool read_graph(ArgReader& r, Graph* g, const GraphLimits& limits = {});

// A backend tensor descriptor's facts (CUDNN_BACKEND_TENSOR_DESCRIPTOR).
struct TensorFacts {
  int64_t uid = 0;
  int32_t dtype = 0;      // cudnnDataType_t
  int nd = 0;
  int64_t dims[8] = {};
  int64_t strides[8] = {};
  bool is_virtual = false;
};
// False when `n` is no tensor or lacks its dims, strides, type or uid.
bool tensor_facts(const Node& n, TensorFacts* out);

// Bytes of cudnnDataType_t `dtype`; 0 when rgpu does not size it.
uint32_t dtype_bytes(int32_t dtype);

// Bytes from a tensor's first element to one past its last (dims and
// strides in elements, strides not negative); kNoExtent when it cannot be
// sized (overflow, unknown type, a negative dim or stride). 0 when empty.
uint64_t tensor_bytes(int32_t dtype, int nd, const int64_t* dims, const int64_t* strides);

// The legacy cudnnTensorDescriptor_t / cudnnFilterDescriptor_t: what
// cudnnSetTensorNdDescriptor / cudnnSetFilterNdDescriptor set. A filter is
// kept packed, strides from its format.
struct LegacyTensor {
  int32_t dtype = 0;
  int32_t nd = 0;
  int32_t dims[8] = {};
  int32_t strides[8] = {};
};
void write_tensor(ArgWriter& w, const LegacyTensor& t);
// Leaves `r` failed when it is not one: nd outside 1..8, a dim below 1 or a
// stride below 0.
bool read_tensor(ArgReader& r, LegacyTensor* t);
uint64_t legacy_bytes(const LegacyTensor& t);

}  // namespace rgpu::protocol::cudnn
