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

#include "handle_kinds.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::protocol::cudnn {

// The hand-written calls' ordinals (Call.invoke's function for api CUDNN),
// above the generated calls' (api/cudnn.lock), which stay small.
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
  kDropoutStatesSize = 1011,  // sync: cuDNN handle -> the dropout state's bytes
  kDropoutSeed = 1012,        // async: cudnnSetDropoutDescriptor with a state to initialise
  kRnnWeightSpace = 1013,     // sync: handle, RnnDesc -> weight space bytes
  kRnnTempSizes = 1014,       // sync: handle, RnnDesc, forward mode, x RnnData -> workspace, reserve bytes
  kRnnWeightParams = 1015,    // sync: handle, RnnDesc, pseudo-layer -> its WeightParam list
  kRnnForward = 1016,         // async
  kRnnBackwardData = 1017,    // async
  kRnnBackwardWeights = 1018, // async
  kLastHandFn = 1018,
};

// Handle kinds (protocol/handles.h's library kinds): cuDNN handles
// (cudnn.api's @handle) and execution plans, minted by the client when it
// finalizes one and kept by rgpud until the plan is destroyed.
inline constexpr uint8_t kHandleKind = handle_kinds::kCudnn;
inline constexpr uint8_t kPlanKind = handle_kinds::kCudnnPlan;

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

// --- recurrent networks ------------------------------------------------------
//
// An RNN descriptor travels as what cudnnSetRNNDescriptor_v8 set, with its
// dropout descriptor's probability and state (a device address, checked by
// rgpud like every other); an RNN data descriptor as what
// cudnnSetRNNDataDescriptor set, the lengths as one buffer of int32. rgpud
// rebuilds the library's descriptors from them.

// Bounds every peer's descriptor obeys (cuDNN's own are lower for most):
// with them no size computed from a descriptor passes 2^63.
inline constexpr int32_t kMaxRnnLayers = 64;
inline constexpr int32_t kMaxRnnVector = 1 << 20;  // input, hidden, projection, data vector
inline constexpr int32_t kMaxRnnSeq = 1 << 20;     // sequence length, batch
inline constexpr uint64_t kMaxDropoutState = 1ull << 32;

struct RnnDesc {
  int32_t algo = 0, cell = 0, bias = 0, dir = 0, input_mode = 0;
  int32_t dtype = 0, math_prec = 0, math_type = 0;  // cudnnDataType_t, cudnnDataType_t, cudnnMathType_t
  int32_t input = 0, hidden = 0, proj = 0, layers = 0;
  uint32_t aux = 0;
  float dropout = 0;
  uint64_t states = 0;        // device address; 0 without a state
  uint64_t states_bytes = 0;
  int dirs() const { return dir == 1 ? 2 : 1; }
  int gates() const { return cell == 2 ? 4 : cell == 3 ? 3 : 1; }  // LSTM 4, GRU 3, RNN 1
};
// Empty when `d` is within the enums' ranges and the bounds above (proj
// <= hidden, 0 <= dropout < 1, a state when dropout > 0); else the reason.
const char* check_rnn(const RnnDesc& d);
void write_rnn(ArgWriter& w, const RnnDesc& d);
// Leaves `r` failed when the bytes are not an RnnDesc check_rnn accepts.
bool read_rnn(ArgReader& r, RnnDesc* d);

struct RnnData {
  int32_t dtype = 0, layout = 0;  // cudnnRNNDataLayout_t: 0 seq-major unpacked, 1 packed, 2 batch-major
  int32_t max_seq = 0, batch = 0, vector = 0;
  std::vector<int32_t> lens;      // batch entries, each 1..max_seq
  bool has_fill = false;
  double fill = 0;                // the padding symbol, as a double
};
const char* check_rnn_data(const RnnData& d);
void write_rnn_data(ArgWriter& w, const RnnData& d);
bool read_rnn_data(ArgReader& r, RnnData* d);
// Bytes of a sequence operand: its rows (packed: the sum of the lengths;
// else max_seq * batch) times vector elements; kNoExtent for a data type
// rgpu does not size.
uint64_t rnn_data_bytes(const RnnData& d);

// One matrix or bias of a pseudo-layer's weights: its offset from the
// weight space's start and its descriptor (cudnnGetRNNWeightParams).
struct WeightParam {
  int32_t lin = 0;
  bool has_matrix = false, has_bias = false;
  uint64_t matrix_offset = 0, bias_offset = 0;
  LegacyTensor matrix, bias;
};
inline constexpr uint64_t kMaxWeightParams = 9;  // 2 * 4 gates and an LSTM's projection
void write_weight_params(ArgWriter& w, const std::vector<WeightParam>& p);
bool read_weight_params(ArgReader& r, std::vector<WeightParam>* p);

}  // namespace rgpu::protocol::cudnn
