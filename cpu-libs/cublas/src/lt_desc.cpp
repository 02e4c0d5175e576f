// cuBLASLt handle, matrix layout, matmul descriptor and preference entry
// points. Attributes are set and read by exact size, as cuBLASLt checks them.
#include "lt_desc.h"

#include <cstring>

#include "api.h"
#include "handle.h"

namespace rgpu::cpublas {

namespace {

// Where one attribute lives in a descriptor, and its size.
struct Field {
  void* at = nullptr;
  size_t size = 0;
};

template <class T>
Field field(T& v) {
  return {&v, sizeof(T)};
}

Field layout_field(LayoutData& l, cublasLtMatrixLayoutAttribute_t attr) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return field(l.type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return field(l.order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return field(l.rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return field(l.cols);
    case CUBLASLT_MATRIX_LAYOUT_LD: return field(l.ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return field(l.batch);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return field(l.stride);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: return field(l.plane_offset);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE: return field(l.batch_mode);
  }
  return {};
}

Field matmul_field(MatmulData& d, cublasLtMatmulDescAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return field(d.compute_type);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return field(d.scale_type);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return field(d.pointer_mode);
    case CUBLASLT_MATMUL_DESC_TRANSA: return field(d.transa);
    case CUBLASLT_MATMUL_DESC_TRANSB: return field(d.transb);
    case CUBLASLT_MATMUL_DESC_TRANSC: return field(d.transc);
    case CUBLASLT_MATMUL_DESC_FILL_MODE: return field(d.fill_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return field(d.epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return field(d.bias);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return field(d.bias_batch_stride);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return field(d.aux);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return field(d.aux_ld);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return field(d.aux_batch_stride);
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE: return field(d.alpha_vector_batch_stride);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: return field(d.sm_count_target);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: return field(d.a_scale);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: return field(d.b_scale);
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER: return field(d.c_scale);
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER: return field(d.d_scale);
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER: return field(d.amax_d);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return field(d.aux_data_type);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER: return field(d.aux_scale);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER: return field(d.aux_amax);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return field(d.fast_accum);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return field(d.bias_data_type);
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE: return field(d.scale_modes[0]);
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE: return field(d.scale_modes[1]);
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE: return field(d.scale_modes[2]);
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE: return field(d.scale_modes[3]);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE: return field(d.scale_modes[4]);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER: return field(d.d_out_scale);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE: return field(d.d_out_scale_mode);
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR: return field(d.emulation);
  }
  return {};
}

Field preference_field(PreferenceData& p, cublasLtMatmulPreferenceAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return field(p.search_mode);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return field(p.max_workspace);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: return field(p.reduction_mask);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return field(p.min_alignment[0]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return field(p.min_alignment[1]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return field(p.min_alignment[2]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return field(p.min_alignment[3]);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: return field(p.max_waves);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: return field(p.impl_mask);
  }
  return {};
}

cublasStatus_t set(Field f, const void* buf, size_t size) {
  if (!f.at || !buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(f.at, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

// cuBLASLt's get contract: size 0 asks for the size; otherwise the buffer
// must hold exactly the attribute.
cublasStatus_t get(Field f, void* buf, size_t size, size_t* written) {
  if (!f.at) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (!written) return CUBLAS_STATUS_INVALID_VALUE;
    *written = f.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, f.at, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

RGPU_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  CUcontext ctx = current_context();
  if (!ctx) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new (std::nothrow) cublasLtContext();
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  h->ctx = ctx;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

RGPU_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return cublasGetProperty(type, value);
}

RGPU_EXPORT const char* cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }
RGPU_EXPORT const char* cublasLtGetStatusString(cublasStatus_t status) { return cublasGetStatusString(status); }

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                                      uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new (std::nothrow) cublasLtMatrixLayoutOpaque_t{};
  if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
  auto* d = new (l->data) LayoutData();
  d->type = type;
  d->rows = rows;
  d->cols = cols;
  d->ld = ld;
  *layout = l;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                            cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                            size_t size) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  return set(layout_field(*data(layout), attr), buf, size);
}

RGPU_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                            cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                            size_t size, size_t* written) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  return get(layout_field(*data(layout), attr), buf, size, written);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                    cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new (std::nothrow) cublasLtMatmulDescOpaque_t{};
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  auto* d = new (o->data) MatmulData();
  d->compute_type = compute;
  d->scale_type = scale;
  *desc = o;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                          cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                          size_t size) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  return set(matmul_field(*data(desc), attr), buf, size);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                                          cublasLtMatmulDescAttributes_t attr, void* buf, size_t size,
                                                          size_t* written) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  return get(matmul_field(*data(desc), attr), buf, size, written);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t{};
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  new (o->data) PreferenceData();
  *pref = o;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                cublasLtMatmulPreferenceAttributes_t attr,
                                                                const void* buf, size_t size) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  return set(preference_field(*data(pref), attr), buf, size);
}

RGPU_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                                cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                                size_t size, size_t* written) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  return get(preference_field(*data(pref), attr), buf, size, written);
}
