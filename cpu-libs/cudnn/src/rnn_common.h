// What the stand-in's RNN entry points share: checking an RNN descriptor,
// its arithmetic configuration, the reserve space's size, and moving a
// sequence operand (any of the three data layouts, fp32/fp16/bf16) to and
// from the dense float32 form rnn_math.h computes on.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "rnn_desc.h"
#include "rnn_math.h"

namespace rgpu::cpudnn {

// The dropout state: the generator's seed and counter.
inline constexpr size_t kDropoutStateBytes = 16;

const RnnDesc* rnn_of(cudnnRNNDescriptor_t d);
const RnnData* data_of(cudnnRNNDataDescriptor_t d);

// CUDNN_STATUS_BAD_PARAM for a descriptor cuDNN would refuse,
// CUDNN_STATUS_NOT_SUPPORTED (logged with its reason) for one the stand-in
// cannot compute exactly.
cudnnStatus_t check_rnn(const RnnDesc& r);
rnn::Config config_of(const RnnDesc& r);
size_t elem_bytes(int32_t dtype);  // a cudnnDataType_t
// A descriptor's data type as cuDNN's enum (the bag keeps it as on the wire).
inline cudnnDataType_t dtype_of(const RnnDesc& r) { return cudnnDataType_t(r.dtype); }

// The reserve space of a training forward over batches shaped as `x`.
cudnnStatus_t reserve_bytes(const RnnDesc& r, const RnnData& x, uint64_t* out);

// Rows a sequence operand holds (packed: the sum of the lengths) and its bytes.
uint64_t data_rows(const RnnData& d);
uint64_t data_bytes(const RnnData& d);

// `src` in d's layout and type -> dense T*B rows of d.vector floats (zeros
// at the padding), and back (the padding of an unpacked operand gets
// `fill`, when `write_fill`).
void to_dense(const RnnData& d, const void* src, float* dense);
void from_dense(const RnnData& d, const float* dense, void* dst, bool write_fill);

}  // namespace rgpu::cpudnn
