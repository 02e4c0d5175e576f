// cuDNN's RNN descriptors on the wire (rgpu/protocol/cudnn_wire.h, "recurrent
// networks"). The enum bounds are cuDNN 9's (cudnn_adv.h, cudnn_graph.h),
// written as numbers: the protocol library does not include cuDNN.
#include <cmath>
#include <cstring>

#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::protocol::cudnn {
namespace {

bool in(int32_t v, int32_t lo, int32_t hi) { return v >= lo && v <= hi; }

}  // namespace

const char* check_rnn(const RnnDesc& d) {
  if (!in(d.algo, 0, 3)) return "algo";
  if (!in(d.cell, 0, 3)) return "cell mode";
  if (!in(d.bias, 0, 3)) return "bias mode";
  if (!in(d.dir, 0, 1)) return "direction mode";
  if (!in(d.input_mode, 0, 1)) return "input mode";
  if (dtype_bytes(d.dtype) == 0 || dtype_bytes(d.math_prec) == 0) return "data type";
  if (!in(d.math_type, 0, 3)) return "math type";
  if (!in(d.layers, 1, kMaxRnnLayers)) return "layers";
  if (!in(d.input, 1, kMaxRnnVector) || !in(d.hidden, 1, kMaxRnnVector)) return "input or hidden size";
  if (!in(d.proj, 1, d.hidden)) return "projection size";
  if (d.aux > 1) return "aux flags";
  if (!std::isfinite(d.dropout) || d.dropout < 0 || d.dropout >= 1) return "dropout";
  if (d.states_bytes > kMaxDropoutState || (d.states == 0) != (d.states_bytes == 0)) return "dropout state";
  if (d.dropout > 0 && d.states == 0) return "dropout without a state";
  return "";
}

void write_rnn(ArgWriter& w, const RnnDesc& d) {
  for (int32_t v : {d.algo, d.cell, d.bias, d.dir, d.input_mode, d.dtype, d.math_prec, d.math_type, d.input,
                    d.hidden, d.proj, d.layers}) {
    w.scalar(v);
  }
  w.scalar(d.aux);
  w.scalar(d.dropout);
  w.u64(d.states);
  w.u64(d.states_bytes);
}

bool read_rnn(ArgReader& r, RnnDesc* d) {
  for (int32_t* v : {&d->algo, &d->cell, &d->bias, &d->dir, &d->input_mode, &d->dtype, &d->math_prec,
                     &d->math_type, &d->input, &d->hidden, &d->proj, &d->layers}) {
    if (!r.scalar(v)) return false;
  }
  if (!r.scalar(&d->aux) || !r.scalar(&d->dropout) || !r.u64(&d->states) || !r.u64(&d->states_bytes)) return false;
  return check_rnn(*d)[0] == '\0' || r.reject();
}

const char* check_rnn_data(const RnnData& d) {
  if (dtype_bytes(d.dtype) == 0) return "data type";
  if (!in(d.layout, 0, 2)) return "layout";
  if (!in(d.max_seq, 1, kMaxRnnSeq) || !in(d.batch, 1, kMaxRnnSeq) || !in(d.vector, 1, kMaxRnnVector)) {
    return "sequence length, batch or vector size";
  }
  if (d.lens.size() != size_t(d.batch)) return "sequence lengths";
  for (int32_t len : d.lens) {
    if (!in(len, 1, d.max_seq)) return "a sequence length";
  }
  if (!std::isfinite(d.fill)) return "padding fill";
  return "";
}

void write_rnn_data(ArgWriter& w, const RnnData& d) {
  for (int32_t v : {d.dtype, d.layout, d.max_seq, d.batch, d.vector}) w.scalar(v);
  w.buffer(d.lens.data(), d.lens.size() * sizeof(int32_t));
  w.scalar(uint32_t(d.has_fill));
  w.scalar(d.fill);
}

bool read_rnn_data(ArgReader& r, RnnData* d) {
  for (int32_t* v : {&d->dtype, &d->layout, &d->max_seq, &d->batch, &d->vector}) {
    if (!r.scalar(v)) return false;
  }
  std::span<const std::byte> lens;
  uint32_t has_fill = 0;
  if (!r.buffer(&lens, uint64_t(kMaxRnnSeq) * sizeof(int32_t)) || !r.scalar(&has_fill) || !r.scalar(&d->fill)) {
    return false;
  }
  if (lens.size() % sizeof(int32_t) != 0 || has_fill > 1) return r.reject();
  d->lens.resize(lens.size() / sizeof(int32_t));
  if (!lens.empty()) std::memcpy(d->lens.data(), lens.data(), lens.size());
  d->has_fill = has_fill != 0;
  return check_rnn_data(*d)[0] == '\0' || r.reject();
}

uint64_t rnn_data_bytes(const RnnData& d) {
  const uint64_t elem = dtype_bytes(d.dtype);
  if (elem == 0) return kNoExtent;
  uint64_t rows = uint64_t(d.max_seq) * uint64_t(d.batch);
  if (d.layout == 1) {
    rows = 0;
    for (int32_t len : d.lens) rows += uint64_t(len);
  }
  return rows * uint64_t(d.vector) * elem;  // < 2^40 * 2^20 * 8 by the bounds
}

void write_weight_params(ArgWriter& w, const std::vector<WeightParam>& p) {
  w.u64(p.size());
  for (const WeightParam& e : p) {
    w.scalar(e.lin);
    w.scalar(uint32_t(e.has_matrix));
    if (e.has_matrix) w.u64(e.matrix_offset), write_tensor(w, e.matrix);
    w.scalar(uint32_t(e.has_bias));
    if (e.has_bias) w.u64(e.bias_offset), write_tensor(w, e.bias);
  }
}

bool read_weight_params(ArgReader& r, std::vector<WeightParam>* p) {
  uint64_t n = 0;
  if (!r.u64(&n)) return false;
  if (n > kMaxWeightParams) return r.reject();
  p->resize(n);
  for (WeightParam& e : *p) {
    uint32_t m = 0, b = 0;
    if (!r.scalar(&e.lin) || !r.scalar(&m) || m > 1) return r.reject();
    e.has_matrix = m != 0;
    if (e.has_matrix && (!r.u64(&e.matrix_offset) || !read_tensor(r, &e.matrix))) return false;
    if (!r.scalar(&b) || b > 1) return r.reject();
    e.has_bias = b != 0;
    if (e.has_bias && (!r.u64(&e.bias_offset) || !read_tensor(r, &e.bias))) return false;
  }
  return true;
}

}  // namespace rgpu::protocol::cudnn
