// The arithmetic of cuDNN's recurrent networks on dense float32 arrays: the
// weight space's layout, forward (training and inference), backward data
// and backward weights, for RNN ReLU/tanh, LSTM (with projection) and GRU
// (the reset gate applied after the recurrent matmul), uni- and
// bidirectional, several layers, per-batch sequence lengths and dropout
// between layers. No CUDA here: rnn.cpp moves the operands in and out.
//
// Dense means: a sequence operand holds T * B rows, row t * B + b; a state
// operand (hx, cx, ...) holds layers * dirs * B rows. Rows at t >= len[b]
// are padding: not read, written as zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rgpu::cpudnn::rnn {

enum Cell : int { kRelu = 0, kTanh = 1, kLstm = 2, kGru = 3 };

struct Config {
  int cell = kLstm;
  int dirs = 1;
  int layers = 1;
  int64_t input = 0;   // layer 0's input vector
  int64_t hidden = 0;
  int64_t proj = 0;    // the recurrent state's size: == hidden unless an LSTM projects
  bool bias_in = true;   // the input GEMM's bias
  bool bias_rec = true;  // the recurrent GEMM's bias
  float dropout = 0;     // on the input of every layer but the first, in training

  int gates() const { return cell == kLstm ? 4 : cell == kGru ? 3 : 1; }
  int64_t layer_input(int layer) const { return layer == 0 ? input : proj * dirs; }
  bool projects() const { return cell == kLstm && proj != hidden; }
};

// One matrix (rows x cols, row-major) or bias (rows) in the weight space,
// offset in elements.
struct Block {
  int64_t offset = 0;
  int64_t rows = 0, cols = 0;
};

// cudnnGetRNNWeightParams' linLayerID: 0..gates-1 the input matrices and
// biases (LSTM i,f,g,o; GRU r,z,n), gates..2*gates-1 the recurrent ones, 8
// an LSTM's projection matrix (no bias). Per pseudo-layer (layer * dirs +
// dir): the input matrices, the recurrent ones, the projection, then the
// input biases and the recurrent biases. False where the block does not
// exist (a bias the bias mode leaves out, an id out of range).
bool matrix_block(const Config& c, int pseudo, int lin, Block* out);
bool bias_block(const Config& c, int pseudo, int lin, Block* out);
int64_t weight_elems(const Config& c);

// The reserve space the stand-in keeps for a batch of T x B, in floats.
uint64_t reserve_floats(const Config& c, int64_t T, int64_t B);

// The dropout masks' random numbers: a counter-based generator whose state
// (seed, counter) lives in the dropout descriptor's state buffer.
struct Rng {
  uint64_t seed = 0;
  uint64_t counter = 0;
  float uniform();  // in [0, 1)
};

struct Batch {
  int64_t T = 0, B = 0;
  std::vector<int32_t> len;  // B entries, each 1..T
  bool active(int64_t t, int64_t b) const { return t < len[size_t(b)]; }
};

// Forward. hx, cx may be null (zeros); hy, cy may be null (not written).
// `reserve` holds reserve_floats(c, T, B) floats (a training call keeps it
// for the backward calls); `rng` is used only when `training` and dropout > 0.
void forward(const Config& c, const Batch& s, const float* x, const float* hx, const float* cx, const float* w,
             float* y, float* hy, float* cy, float* reserve, bool training, Rng* rng);

// Backward data, after a training forward with the same reserve (which it
// updates for backward_weights). dhy, dcy may be null (zeros); dhx, dcx may
// be null (not written).
void backward_data(const Config& c, const Batch& s, const float* dy, const float* dhy, const float* dcy,
                   const float* w, float* dx, float* dhx, float* dcx, float* reserve, bool training);

// Backward weights, after backward_data: adds the gradients to dw.
void backward_weights(const Config& c, const Batch& s, const float* reserve, float* dw);

}  // namespace rgpu::cpudnn::rnn
