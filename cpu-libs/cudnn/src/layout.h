// Strided tensors of any cuDNN data type to and from dense float32, the form
// the stand-in hands oneDNN (which then needs no per-type or per-layout
// primitive, and fp16/bf16 work on CPUs where oneDNN has no kernel for them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rgpu::cpudnn {

struct Strided {
  int32_t dtype = 0;  // cudnnDataType_t: FLOAT, DOUBLE, HALF, BFLOAT16
  int nd = 0;
  int64_t dims[8] = {};
  int64_t strides[8] = {};
  size_t count() const;
};

bool supported_dtype(int32_t dtype);

// `base` is the tensor's first element. Dense means row-major over dims.
void gather(const Strided& t, const void* base, float* out);
// Each element becomes alpha * in + beta * old (old not read when beta is 0).
void scatter(const Strided& t, const float* in, void* base, double alpha, double beta);

}  // namespace rgpu::cpudnn
