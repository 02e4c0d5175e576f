// Element types of the stand-in: sizes, and conversions between half,
// bfloat16 and float (the CPU BLAS computes in float for both).
#pragma once

#include <library_types.h>

#include <cstddef>
#include <cstdint>

namespace rgpu::cpublas {

// Bytes per element of `type`; 0 for a type the stand-in does not compute with.
size_t element_size(cudaDataType type);

// IEEE binary16 and bfloat16 bit patterns to float: exact.
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
// float to binary16 / bfloat16, rounding to nearest even; NaN stays NaN,
// overflow gives infinity, tiny values become subnormal or zero.
uint16_t float_to_half(float f);
uint16_t float_to_bf16(float f);

// `count` elements of `type` (CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F or
// CUDA_R_64F) to float, and back. Unknown types write nothing and return false.
bool to_float(const void* src, cudaDataType type, size_t count, float* dst);
bool from_float(const float* src, size_t count, cudaDataType type, void* dst);

// One scalar of `type` (real types only) as double; false for other types.
bool scalar_to_double(const void* src, cudaDataType type, double* out);

}  // namespace rgpu::cpublas
