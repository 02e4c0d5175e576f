// Checks, sizes and layout conversions of the stand-in's RNNs (rnn_common.h).
#include "rnn_common.h"

#include <cstring>
#include <vector>

#include "layout.h"
#include "rgpu/common/log.h"

namespace rgpu::cpudnn {
namespace {

cudnnStatus_t unsupported(const char* why) {
  RGPU_WARN("cpu cudnn: rnn not supported reason=%s", why);
  return CUDNN_STATUS_NOT_SUPPORTED;
}

// Each row's start: row(t, b) = start[t] + b for a packed operand (sorted
// longest first), t * B + b or b * T + t for the unpacked ones.
struct Rows {
  const RnnData& d;
  std::vector<uint64_t> start;
  explicit Rows(const RnnData& dd) : d(dd) {
    if (d.layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) return;
    start.resize(size_t(d.max_seq));
    uint64_t at = 0;
    for (int32_t t = 0; t < d.max_seq; ++t) {
      start[size_t(t)] = at;
      for (int32_t len : d.lens) at += len > t ? 1 : 0;
    }
  }
  uint64_t row(int64_t t, int64_t b) const {
    switch (d.layout) {
      case CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED: return start[size_t(t)] + uint64_t(b);
      case CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED: return uint64_t(b) * uint64_t(d.max_seq) + uint64_t(t);
      default: return uint64_t(t) * uint64_t(d.batch) + uint64_t(b);
    }
  }
};

Strided vector_of(const RnnData& d) {
  Strided v;
  v.dtype = cudnnDataType_t(d.dtype), v.nd = 1, v.dims[0] = d.vector, v.strides[0] = 1;
  return v;
}

}  // namespace

const RnnDesc* rnn_of(cudnnRNNDescriptor_t d) { return rgpu::protocol::cudnn::rnn_of(d); }

const RnnData* data_of(cudnnRNNDataDescriptor_t d) { return rgpu::protocol::cudnn::rnn_data_of(d); }

cudnnStatus_t check_rnn(const RnnDesc& r) {
  // What cuDNN itself refuses is refused on the wire too (cudnn_wire.h).
  if (rgpu::protocol::cudnn::check_rnn(r)[0] != '\0') return CUDNN_STATUS_BAD_PARAM;
  if (r.proj != r.hidden && r.cell != CUDNN_LSTM) return CUDNN_STATUS_BAD_PARAM;
  if (r.input_mode == CUDNN_SKIP_INPUT) return unsupported("skip input mode");
  if (r.algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC) return unsupported("persistent dynamic algorithm");
  if (r.dtype != CUDNN_DATA_FLOAT && r.dtype != CUDNN_DATA_HALF && r.dtype != CUDNN_DATA_BFLOAT16) {
    return unsupported("data type (float, half and bfloat16 are)");
  }
  // The stand-in computes in float32: a float math precision is exact, a
  // half one is computed more precisely than asked, a double one cannot be.
  if (r.math_prec != CUDNN_DATA_FLOAT && r.math_prec != r.dtype) return unsupported("math precision");
  return CUDNN_STATUS_SUCCESS;
}

rnn::Config config_of(const RnnDesc& r) {
  rnn::Config c;
  c.cell = r.cell == CUDNN_RNN_RELU ? rnn::kRelu : r.cell == CUDNN_RNN_TANH ? rnn::kTanh
           : r.cell == CUDNN_LSTM ? rnn::kLstm : rnn::kGru;
  c.dirs = r.dir == CUDNN_BIDIRECTIONAL ? 2 : 1;
  c.layers = r.layers;
  c.input = r.input, c.hidden = r.hidden, c.proj = r.proj;
  c.bias_in = r.bias == CUDNN_RNN_DOUBLE_BIAS || r.bias == CUDNN_RNN_SINGLE_INP_BIAS;
  c.bias_rec = r.bias == CUDNN_RNN_DOUBLE_BIAS || r.bias == CUDNN_RNN_SINGLE_REC_BIAS;
  c.dropout = r.dropout;
  return c;
}

size_t elem_bytes(int32_t dtype) { return dtype == CUDNN_DATA_FLOAT ? 4 : dtype == CUDNN_DATA_DOUBLE ? 8 : 2; }

cudnnStatus_t reserve_bytes(const RnnDesc& r, const RnnData& x, uint64_t* out) {
  const rnn::Config c = config_of(r);
  // Bounded first in floating point: every factor is below 2^20, the
  // product of a few could pass 2^64.
  const double rec = 3.0 * c.gates() * double(c.hidden) + 4.0 * double(c.hidden) + 2.0 * double(c.proj);
  const double rows = double(x.max_seq) * double(x.batch);
  const double est = rows * (rec * c.layers * c.dirs + 2.0 * (double(c.input) + double(c.proj) * c.dirs) * c.layers);
  if (est * 4.0 > double(uint64_t(1) << 50)) return CUDNN_STATUS_ALLOC_FAILED;
  *out = rnn::reserve_floats(c, x.max_seq, x.batch) * sizeof(float);
  return CUDNN_STATUS_SUCCESS;
}

uint64_t data_rows(const RnnData& d) {
  if (d.layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) return uint64_t(d.max_seq) * uint64_t(d.batch);
  uint64_t n = 0;
  for (int32_t len : d.lens) n += uint64_t(len);
  return n;
}

uint64_t data_bytes(const RnnData& d) {
  return data_rows(d) * uint64_t(d.vector) * elem_bytes(d.dtype);
}

void to_dense(const RnnData& d, const void* src, float* dense) {
  const Rows rows(d);
  const Strided v = vector_of(d);
  const uint64_t row_bytes = uint64_t(d.vector) * elem_bytes(d.dtype);
  const int64_t T = d.max_seq, B = d.batch, V = d.vector;
  std::memset(dense, 0, size_t(T * B * V) * sizeof(float));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      if (t >= d.lens[size_t(b)]) continue;
      gather(v, static_cast<const char*>(src) + rows.row(t, b) * row_bytes, dense + (t * B + b) * V);
    }
}

void from_dense(const RnnData& d, const float* dense, void* dst, bool write_fill) {
  const Rows rows(d);
  const Strided v = vector_of(d);
  const uint64_t row_bytes = uint64_t(d.vector) * elem_bytes(d.dtype);
  const int64_t T = d.max_seq, B = d.batch, V = d.vector;
  std::vector<float> fill(size_t(V), float(d.fill));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      char* at = static_cast<char*>(dst) + rows.row(t, b) * row_bytes;
      if (t < d.lens[size_t(b)]) {
        scatter(v, dense + (t * B + b) * V, at, 1.0, 0.0);
      } else if (write_fill && d.layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) {
        scatter(v, fill.data(), at, 1.0, 0.0);
      }
    }
}

}  // namespace rgpu::cpudnn
