// cuDNN's dropout, RNN and RNN data descriptors, the opaque structs cudnn.h
// names, as one bag for the two libraries that implement them: the client
// library (which sends a descriptor's value inside each call) and the CPU
// stand-in (which computes from it). Each holds what its Set call set, in
// the wire's form (cudnn_wire.h, "recurrent networks"), and the Set and Get
// calls' shared part is here. Header-only: the protocol library itself
// does not include cuDNN; its users that implement cuDNN do.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "rgpu/protocol/cudnn_wire.h"

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
  rgpu::protocol::cudnn::RnnDesc d;
  cudnnDropoutDescriptor_t dropout = nullptr;  // as given, for cudnnGetRNNDescriptor_v8
};

struct cudnnRNNDataStruct {
  static constexpr uint32_t kMagic = 0x726e6461;
  uint32_t magic = kMagic;
  bool set = false;
  rgpu::protocol::cudnn::RnnData d;
};

namespace rgpu::protocol::cudnn {

inline bool live(const cudnnDropoutStruct* d) { return d && d->magic == cudnnDropoutStruct::kMagic; }

// The checks cudnnSetDropoutDescriptor (`restore` false) and
// cudnnRestoreDropoutDescriptor (true) share: a live descriptor, a handle, a
// rate in [0, 1), states when the rate is above 0 or when restoring, and at
// least `least_bytes` of them (the library's state size; at least 1).
inline cudnnStatus_t check_dropout(const cudnnDropoutStruct* d, const void* handle, float p, const void* states,
                                   size_t bytes, size_t least_bytes, bool restore) {
  if (!live(d) || !handle || !(p >= 0.0f && p < 1.0f)) return CUDNN_STATUS_BAD_PARAM;
  if ((p > 0 || restore) && !states) return CUDNN_STATUS_BAD_PARAM;
  if (states && bytes < (least_bytes > 0 ? least_bytes : 1)) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

inline void set_dropout(cudnnDropoutStruct* d, float p, void* states, size_t bytes, unsigned long long seed) {
  d->p = p, d->states = states, d->states_bytes = states ? bytes : 0, d->seed = seed;
}

inline cudnnStatus_t get_dropout(const cudnnDropoutStruct* d, const void* handle, float* p, void** states,
                                 unsigned long long* seed) {
  if (!live(d) || !handle || !p || !states || !seed) return CUDNN_STATUS_BAD_PARAM;
  *p = d->p, *states = d->states, *seed = d->seed;
  return CUDNN_STATUS_SUCCESS;
}

// The value a descriptor holds once set, or null.
inline const RnnDesc* rnn_of(const cudnnRNNStruct* d) {
  return d && d->magic == cudnnRNNStruct::kMagic && d->set ? &d->d : nullptr;
}
inline const RnnData* rnn_data_of(const cudnnRNNDataStruct* d) {
  return d && d->magic == cudnnRNNDataStruct::kMagic && d->set ? &d->d : nullptr;
}

// cudnnSetRNNDescriptor_v8's arguments as a value (the dropout descriptor's
// rate and state with them); CUDNN_STATUS_BAD_PARAM, leaving *out alone,
// when a descriptor is not live or check_rnn refuses the value.
inline cudnnStatus_t rnn_value(const cudnnRNNStruct* d, cudnnRNNAlgo_t algo, cudnnRNNMode_t cell,
                               cudnnRNNBiasMode_t bias, cudnnDirectionMode_t dir, cudnnRNNInputMode_t input_mode,
                               cudnnDataType_t dtype, cudnnDataType_t math_prec, cudnnMathType_t math_type,
                               int32_t input, int32_t hidden, int32_t proj, int32_t layers,
                               const cudnnDropoutStruct* dropout, uint32_t aux, RnnDesc* out) {
  if (!d || d->magic != cudnnRNNStruct::kMagic || (dropout && !live(dropout))) return CUDNN_STATUS_BAD_PARAM;
  RnnDesc r;
  r.algo = algo, r.cell = cell, r.bias = bias, r.dir = dir, r.input_mode = input_mode;
  r.dtype = dtype, r.math_prec = math_prec, r.math_type = math_type;
  r.input = input, r.hidden = hidden, r.proj = proj, r.layers = layers, r.aux = aux;
  if (dropout) {
    r.dropout = dropout->p;
    r.states = reinterpret_cast<uintptr_t>(dropout->states);
    r.states_bytes = dropout->states_bytes;
  }
  if (check_rnn(r)[0] != '\0') return CUDNN_STATUS_BAD_PARAM;
  *out = r;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGetRNNDescriptor_v8: each output that is not null.
inline cudnnStatus_t get_rnn(const cudnnRNNStruct* d, cudnnRNNAlgo_t* algo, cudnnRNNMode_t* cell,
                             cudnnRNNBiasMode_t* bias, cudnnDirectionMode_t* dir, cudnnRNNInputMode_t* input_mode,
                             cudnnDataType_t* dtype, cudnnDataType_t* math_prec, cudnnMathType_t* math_type,
                             int32_t* input, int32_t* hidden, int32_t* proj, int32_t* layers,
                             cudnnDropoutDescriptor_t* dropout, uint32_t* aux) {
  const RnnDesc* r = rnn_of(d);
  if (!r) return CUDNN_STATUS_BAD_PARAM;
  if (algo) *algo = cudnnRNNAlgo_t(r->algo);
  if (cell) *cell = cudnnRNNMode_t(r->cell);
  if (bias) *bias = cudnnRNNBiasMode_t(r->bias);
  if (dir) *dir = cudnnDirectionMode_t(r->dir);
  if (input_mode) *input_mode = cudnnRNNInputMode_t(r->input_mode);
  if (dtype) *dtype = cudnnDataType_t(r->dtype);
  if (math_prec) *math_prec = cudnnDataType_t(r->math_prec);
  if (math_type) *math_type = cudnnMathType_t(r->math_type);
  if (input) *input = r->input;
  if (hidden) *hidden = r->hidden;
  if (proj) *proj = r->proj;
  if (layers) *layers = r->layers;
  if (dropout) *dropout = d->dropout;
  if (aux) *aux = r->aux;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGetRNNDataDescriptor but the padding fill, which each library
// writes in the data type itself.
inline cudnnStatus_t get_rnn_data(const cudnnRNNDataStruct* d, cudnnDataType_t* dtype, cudnnRNNDataLayout_t* layout,
                                  int* max_seq, int* batch, int* vector, int lens_requested, int lens[]) {
  const RnnData* r = rnn_data_of(d);
  if (!r || lens_requested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (dtype) *dtype = cudnnDataType_t(r->dtype);
  if (layout) *layout = cudnnRNNDataLayout_t(r->layout);
  if (max_seq) *max_seq = r->max_seq;
  if (batch) *batch = r->batch;
  if (vector) *vector = r->vector;
  for (int i = 0; lens && i < lens_requested && i < r->batch; ++i) lens[i] = r->lens[size_t(i)];
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace rgpu::protocol::cudnn
