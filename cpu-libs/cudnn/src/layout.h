// Strided tensors of any cuDNN data type to and from dense float32, the form
// the stand-in hands oneDNN (which then needs no per-type or per-layout
// primitive, and fp16/bf16 work on CPUs where oneDNN has no kernel for them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rgpu::cpudnn {

struct Strided {
  int32_t dtype = 0;  // cudnnDataType_t: FLOAT, DOUBLE, HALF, BFLOAT16
  int nd = 0;
  int64_t dims[8] = {};
  int64_t strides[8] = {};
  size_t count() const;
};

bool supported_dtype(int32_t dtype);

// Float32 with row-major strides over its dims: its bytes already are the
// dense form.
bool dense_f32(const Strided& t);

// `base` is the tensor's first element. Dense means row-major over dims.
void gather(const Strided& t, const void* base, float* out);
// Each element becomes alpha * in + beta * old (old not read when beta is 0).
void scatter(const Strided& t, const float* in, void* base, double alpha, double beta);

// The dense float32 form of an operand held at `base` (a job's host copy),
// for oneDNN to read or write: `base` itself where that already is the dense
// form and nothing is left to convert (dense_f32, and for an output alpha 1
// and beta 0), else a converted copy. The values oneDNN sees and the bytes
// stored are the same either way; in place saves a copy each way.
// Lifetime: `t` and `base` must outlive it.
class DenseF32 {
 public:
  enum Use { kInput, kOutput };
  // An input is gathered here unless used in place. `in_place` false forces
  // a copy (a caller that rewrites the values, as a mirrored filter).
  DenseF32(const Strided& t, void* base, Use use, double alpha = 1.0, double beta = 0.0, bool in_place = true);
  DenseF32(const DenseF32&) = delete;
  DenseF32& operator=(const DenseF32&) = delete;

  float* data() { return data_; }
  size_t count() const { return count_; }
  // An output: stores the result at `base` as alpha * result + beta * old
  // (nothing to do in place).
  void store();

 private:
  const Strided& t_;
  void* base_;
  double alpha_, beta_;
  size_t count_;
  std::vector<float> copy_;
  float* data_;
};

}  // namespace rgpu::cpudnn
