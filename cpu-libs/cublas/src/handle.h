// The stand-in's handles: cuBLAS's cublasContext and cuBLASLt's
// cublasLtContext (opaque in NVIDIA's headers, defined here).
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include <cstddef>
#include <type_traits>

// One cuBLAS handle: the context it was created in and the settings that
// apply to its calls. Thread safety: as cuBLAS, a handle may be used from
// several threads but not reconfigured (Set*) concurrently with its use.
struct cublasContext {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  // Accepted and not used: the CPU needs no device scratch space.
  void* workspace = nullptr;
  size_t workspace_size = 0;
};

// One cuBLASLt handle: the context it was created in (cublasLtMatmul names
// its stream per call). Immutable after creation.
struct cublasLtContext {
  CUcontext ctx = nullptr;
};

// cuBLAS documents that a cublasHandle_t may be cast to a cublasLtHandle_t
// (PyTorch passes its cuBLAS handle to cublasLtMatmul, and rgpud does the
// same for a client that does): both begin with the context, which is all
// the Lt entry points read.
static_assert(offsetof(cublasContext, ctx) == 0 && offsetof(cublasLtContext, ctx) == 0);
static_assert(std::is_standard_layout_v<cublasContext> && std::is_standard_layout_v<cublasLtContext>);

namespace rgpu::cpublas {

// The version the stand-in reports: the cuBLAS headers it was built with.
constexpr int kVersion = CUBLAS_VERSION;

// The current context, for a new handle; nullptr when there is none.
CUcontext current_context();

}  // namespace rgpu::cpublas
