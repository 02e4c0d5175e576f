// One GEMM description shared by cuBLAS's gemm family and cublasLtMatmul:
// D = epilogue(alpha * op(A) op(B) + beta * C [+ bias]), batched, queued on
// a stream and computed by the CPU BLAS.
#pragma once

#include <cublas_api.h>
#include <cuda.h>

#include <cstdint>

namespace rgpu::cpublas {

// The arithmetic a GEMM is computed in (from cuBLAS's compute type).
enum class Domain { kReal32, kReal64, kComplex32, kComplex64 };

enum class Activation { kNone, kRelu, kGelu };

struct GemmMatrix {
  const void* ptr = nullptr;  // device memory
  cudaDataType type = CUDA_R_32F;
  int64_t ld = 0;
  int64_t stride = 0;  // elements between batch entries
};

// Arguments already checked by the entry point for cuBLAS's argument rules
// (dimensions >= 0, leading dimensions, operations).
struct GemmSpec {
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmMatrix a, b, c, d;  // C is read, D written; cuBLAS passes C for both
  Domain domain = Domain::kReal32;
  cudaDataType scale_type = CUDA_R_32F;  // type of alpha and beta
  bool device_scalars = false;           // alpha/beta point to device memory
  const void* alpha = nullptr;
  const void* beta = nullptr;
  // cuBLASLt epilogues (real domains only).
  Activation activation = Activation::kNone;
  const void* bias = nullptr;  // m elements per batch entry, device memory
  cudaDataType bias_type = CUDA_R_32F;
  int64_t bias_stride = 0;
};

// The domain of cuBLAS compute type `compute` for matrices of type `ab`
// (A and B) and `cd` (C and D), and the type of its alpha and beta; false for
// a combination the stand-in does not compute.
bool gemm_types(cublasComputeType_t compute, cudaDataType ab, cudaDataType cd, Domain* domain,
                cudaDataType* scale_type);

// Queues the GEMM on `stream` of the current context. CUBLAS_STATUS_SUCCESS
// once queued (an empty problem queues nothing), CUBLAS_STATUS_NOT_SUPPORTED
// for types outside the domain or sizes the CPU BLAS cannot index (> INT_MAX),
// CUBLAS_STATUS_EXECUTION_FAILED for memory outside the context's
// allocations, CUBLAS_STATUS_INVALID_VALUE for a null scalar.
cublasStatus_t enqueue_gemm(const GemmSpec& spec, CUstream stream);

}  // namespace rgpu::cpublas
