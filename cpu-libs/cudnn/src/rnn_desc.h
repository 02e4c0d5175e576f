// The stand-in's dropout, RNN and RNN data descriptors (opaque structs in
// NVIDIA's headers): what their Set calls set, copied, so a call reads
// them whole and queued work never points back at a descriptor.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "rnn_math.h"

struct cudnnDropoutStruct {
  static constexpr uint32_t kMagic = 0x646f726e;
  uint32_t magic = kMagic;
  float p = 0;
  void* states = nullptr;
  size_t states_bytes = 0;
  unsigned long long seed = 0;
};

struct cudnnRNNStruct {
  static constexpr uint32_t kMagic = 0x726e6e64;
  uint32_t magic = kMagic;
  bool set = false;
  cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
  cudnnRNNMode_t cell = CUDNN_LSTM;
  cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
  cudnnDirectionMode_t dir = CUDNN_UNIDIRECTIONAL;
  cudnnRNNInputMode_t input_mode = CUDNN_LINEAR_INPUT;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT, math_prec = CUDNN_DATA_FLOAT;
  cudnnMathType_t math_type = CUDNN_DEFAULT_MATH;
  int32_t input = 0, hidden = 0, proj = 0, layers = 0;
  uint32_t aux = 0;
  cudnnDropoutDescriptor_t dropout_desc = nullptr;  // as given, for cudnnGetRNNDescriptor_v8
  float dropout = 0;                                // its values when set
  void* states = nullptr;
  size_t states_bytes = 0;
};

struct cudnnRNNDataStruct {
  static constexpr uint32_t kMagic = 0x726e6461;
  uint32_t magic = kMagic;
  bool set = false;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  int32_t max_seq = 0, batch = 0, vector = 0;
  std::vector<int32_t> lens;
  float fill = 0;  // written at the padding of an unpacked output
  bool has_fill = false;
};

namespace rgpu::cpudnn {

// The largest sizes the stand-in accepts (cuDNN's own limits are lower for
// most; these keep every size below 2^63 bytes).
inline constexpr int32_t kMaxRnnLayers = 64;
inline constexpr int32_t kMaxRnnVector = 1 << 20;  // input, hidden, projection, data vector
inline constexpr int32_t kMaxRnnSeq = 1 << 20;     // sequence length and batch

}  // namespace rgpu::cpudnn
