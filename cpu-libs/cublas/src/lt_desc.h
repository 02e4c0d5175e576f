// cuBLASLt descriptors: the stand-in's contents of NVIDIA's semi-opaque
// structs (matrix layout, matmul descriptor, preference), kept inside them so
// that their sizes and the ABI are cuBLASLt's.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <new>

namespace rgpu::cpublas {

struct LayoutData {
  int32_t type = CUDA_R_32F;  // cudaDataType
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
  int64_t stride = 0;
  int64_t plane_offset = 0;
};
static_assert(sizeof(LayoutData) <= sizeof(cublasLtMatrixLayoutOpaque_t));

struct MatmulData {
  int32_t compute_type = CUBLAS_COMPUTE_32F;
  int32_t scale_type = CUDA_R_32F;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N;
  int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int64_t bias_batch_stride = 0;
  void* aux = nullptr;
  int64_t aux_ld = 0, aux_batch_stride = 0, alpha_vector_batch_stride = 0;
  int32_t sm_count_target = 0;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* c_scale = nullptr;
  const void* d_scale = nullptr;
  void* amax_d = nullptr;
  int32_t aux_data_type = -1;
  void* aux_scale = nullptr;
  void* aux_amax = nullptr;
  int8_t fast_accum = 0;
  int32_t bias_data_type = -1;  // -1: D's type
  int32_t scale_modes[5] = {};  // A, B, C, D, aux
  void* d_out_scale = nullptr;
  int32_t d_out_scale_mode = 0;
  void* emulation = nullptr;
};
static_assert(sizeof(MatmulData) <= sizeof(cublasLtMatmulDescOpaque_t));

struct PreferenceData {
  uint32_t search_mode = 0;
  uint64_t max_workspace = 0;
  uint32_t reduction_mask = 0xffffffffu;
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D
  float max_waves = 0;
  uint64_t impl_mask = ~0ull;
};
static_assert(sizeof(PreferenceData) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

inline LayoutData* data(cublasLtMatrixLayout_t l) { return std::launder(reinterpret_cast<LayoutData*>(l->data)); }
inline MatmulData* data(cublasLtMatmulDesc_t d) { return std::launder(reinterpret_cast<MatmulData*>(d->data)); }
inline PreferenceData* data(cublasLtMatmulPreference_t p) {
  return std::launder(reinterpret_cast<PreferenceData*>(p->data));
}

}  // namespace rgpu::cpublas
