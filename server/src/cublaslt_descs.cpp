// Checking cuBLASLt's descriptor bags and rebuilding the library's own.
#include "cublaslt_descs.h"

#include <string>

namespace rgpu::server {
namespace {

namespace lt = protocol::lt;
namespace attr = protocol::lt::attr;
using dispatch::refuse;

InvokeOutcome ok() { return {}; }

InvokeOutcome no(wire::Api api, uint32_t code, const char* what, const std::string& why) {
  return refuse(api, code, std::string(what) + ": " + why);
}

bool epilogue_checked(uint64_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return true;
    default:
      return false;  // an auxiliary buffer or a gradient whose extent rgpud does not compute
  }
}

InvokeOutcome check_matmul(wire::Api api, const char* what, const lt::Desc& d) {
  const uint32_t mode = lt::pointer_mode(d);
  if (mode != CUBLASLT_POINTER_MODE_HOST && mode != CUBLASLT_POINTER_MODE_DEVICE) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "pointer mode " + std::to_string(mode) + " is not checked");
  }
  const uint64_t epilogue = lt::value(d, attr::CUBLASLT_MATMUL_DESC_EPILOGUE);
  if (!epilogue_checked(epilogue)) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "epilogue " + std::to_string(epilogue) + " is not checked");
  }
  for (uint32_t id : {attr::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, attr::CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                      attr::CUBLASLT_MATMUL_DESC_C_SCALE_MODE, attr::CUBLASLT_MATMUL_DESC_D_SCALE_MODE,
                      attr::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, attr::CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE}) {
    if (lt::value(d, id) != 0) {  // block scales: their extent is not one scalar
      return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, std::string(lt::find_attr(d.kind, id)->name) + " is not checked");
    }
  }
  return ok();
}

InvokeOutcome check_layout(wire::Api api, const char* what, const lt::Desc& d) {
  const int64_t order = lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_ORDER);
  if (order != CUBLASLT_ORDER_COL && order != CUBLASLT_ORDER_ROW) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "order " + std::to_string(order) + " is not checked");
  }
  if (lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_MODE) != CUBLASLT_BATCH_MODE_STRIDED) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "a pointer-array batch is not checked");
  }
  if (lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET) != 0) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "planar complex is not checked");
  }
  if (lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) > 1 &&
      lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) < 0) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "a batch at a negative stride is not checked");
  }
  if (rgpu_data_type_bytes(lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_TYPE)) == kNoExtent) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, "its type is not checked");
  }
  if (rgpu_lt_matrix_bytes(d) == kNoExtent) {
    return no(api, CUBLAS_STATUS_INVALID_VALUE, what, "no matrix has this layout");
  }
  return ok();
}

// Whether [p, p + bytes) is the calling context's memory (p 0: not set).
bool in_session(const CallEnv& env, uint64_t p, uint64_t bytes) { return p == 0 || env.device_range(p, bytes); }

// Bytes of one value of a compute type's scalar (cublasComputeType_t).
uint64_t compute_scalar_bytes(int64_t compute) { return rgpu_blas_scale_bytes(compute, CUDA_R_32F); }

// The library's descriptor filled with every attribute the bag sets.
template <class Object, class Attr>
bool fill(const lt::Desc& d, Object object, cublasStatus_t (*set)(Object, Attr, const void*, size_t),
          uint32_t* status) {
  if (!set) {
    *status = CUBLAS_STATUS_NOT_SUPPORTED;
    return false;
  }
  for (const lt::AttrInfo& a : lt::kAttributes) {
    if (a.kind != d.kind || !((d.set >> a.id) & 1)) continue;
    const uint64_t v = d.values[a.id];  // little-endian: its first a.bytes bytes are the value
    const cublasStatus_t st = set(object, static_cast<Attr>(a.id), &v, a.bytes);
    if (st != CUBLAS_STATUS_SUCCESS) {
      *status = st;
      return false;
    }
  }
  return true;
}

}  // namespace

InvokeOutcome lt_check(wire::Api api, const char* what, const lt::Desc& d) {
  if (const lt::AttrInfo* a = lt::refused_attr(d)) {
    return no(api, CUBLAS_STATUS_NOT_SUPPORTED, what, std::string(a->name) + " is not supported");
  }
  switch (d.kind) {
    case attr::kMatmul: return check_matmul(api, what, d);
    case attr::kLayout: return check_layout(api, what, d);
    default: return ok();
  }
}

InvokeOutcome lt_matmul_pointers(const CallEnv& env, wire::Api api, const lt::Desc& op, const lt::Desc&,
                                 const lt::Desc&, const lt::Desc&, const lt::Desc& d) {
  const char* what = "cublasLtMatmul";
  const uint64_t epilogue = lt::value(op, attr::CUBLASLT_MATMUL_DESC_EPILOGUE);
  const uint64_t bias = lt::value(op, attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  if (epilogue & CUBLASLT_EPILOGUE_BIAS) {
    // One value per row of D, of the bias type (D's unless set), per batch.
    const int64_t type = lt::signed_value(op, attr::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
    const uint64_t elem =
        rgpu_data_type_bytes(type == -1 ? lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_TYPE) : type);
    const uint64_t rows = lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_ROWS);
    const int64_t batch = lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
    const int64_t stride = lt::signed_value(op, attr::CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE);
    const uint64_t bytes = rows > uint64_t{INT64_MAX} ? kNoExtent
                                                      : rgpu_blas_batch_bytes(0, static_cast<long long>(rows), 1,
                                                                              static_cast<long long>(rows ? rows : 1),
                                                                              stride, batch, elem);
    if (bias == 0 || !env.device_range(bias, bytes)) {
      return no(api, CUBLAS_STATUS_INVALID_VALUE, what, "the bias is not memory of this context");
    }
  } else if (!in_session(env, bias, 0)) {
    return no(api, CUBLAS_STATUS_INVALID_VALUE, what, "the bias pointer is not memory of this context");
  }
  const uint64_t scalar = compute_scalar_bytes(lt::signed_value(op, attr::CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  for (uint32_t id : {attr::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, attr::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                      attr::CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, attr::CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
                      attr::CUBLASLT_MATMUL_DESC_AMAX_D_POINTER}) {
    if (!in_session(env, lt::value(op, id), scalar)) {
      return no(api, CUBLAS_STATUS_INVALID_VALUE, what,
                std::string(lt::find_attr(op.kind, id)->name) + " is not memory of this context");
    }
  }
  return ok();
}

LtDescriptors::~LtDescriptors() {
  for (int i = 0; i < n_matmuls_; ++i) table_.cublasLtMatmulDescDestroy(matmuls_[i]);
  for (int i = 0; i < n_layouts_; ++i) table_.cublasLtMatrixLayoutDestroy(layouts_[i]);
  for (int i = 0; i < n_preferences_; ++i) table_.cublasLtMatmulPreferenceDestroy(preferences_[i]);
}

cublasLtMatmulDesc_t LtDescriptors::matmul(const lt::Desc& d) {
  if (!table_.cublasLtMatmulDescCreate || !table_.cublasLtMatmulDescDestroy || n_matmuls_ == kMax) {
    status_ = CUBLAS_STATUS_NOT_SUPPORTED;
    return nullptr;
  }
  cublasLtMatmulDesc_t out = nullptr;
  const auto compute = static_cast<cublasComputeType_t>(lt::value(d, attr::CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  const auto scale = static_cast<cudaDataType_t>(lt::value(d, attr::CUBLASLT_MATMUL_DESC_SCALE_TYPE));
  if (cublasStatus_t st = table_.cublasLtMatmulDescCreate(&out, compute, scale); st != CUBLAS_STATUS_SUCCESS) {
    status_ = st;
    return nullptr;
  }
  matmuls_[n_matmuls_++] = out;
  return fill(d, out, table_.cublasLtMatmulDescSetAttribute, &status_) ? out : nullptr;
}

cublasLtMatrixLayout_t LtDescriptors::layout(const lt::Desc& d) {
  if (!table_.cublasLtMatrixLayoutCreate || !table_.cublasLtMatrixLayoutDestroy || n_layouts_ == kMax) {
    status_ = CUBLAS_STATUS_NOT_SUPPORTED;
    return nullptr;
  }
  cublasLtMatrixLayout_t out = nullptr;
  const auto type = static_cast<cudaDataType>(lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_TYPE));
  if (cublasStatus_t st = table_.cublasLtMatrixLayoutCreate(&out, type, lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_ROWS),
                                                            lt::value(d, attr::CUBLASLT_MATRIX_LAYOUT_COLS),
                                                            lt::signed_value(d, attr::CUBLASLT_MATRIX_LAYOUT_LD));
      st != CUBLAS_STATUS_SUCCESS) {
    status_ = st;
    return nullptr;
  }
  layouts_[n_layouts_++] = out;
  return fill(d, out, table_.cublasLtMatrixLayoutSetAttribute, &status_) ? out : nullptr;
}

cublasLtMatmulPreference_t LtDescriptors::preference(const lt::Desc& d) {
  if (!table_.cublasLtMatmulPreferenceCreate || !table_.cublasLtMatmulPreferenceDestroy || n_preferences_ == kMax) {
    status_ = CUBLAS_STATUS_NOT_SUPPORTED;
    return nullptr;
  }
  cublasLtMatmulPreference_t out = nullptr;
  if (cublasStatus_t st = table_.cublasLtMatmulPreferenceCreate(&out); st != CUBLAS_STATUS_SUCCESS) {
    status_ = st;
    return nullptr;
  }
  preferences_[n_preferences_++] = out;
  return fill(d, out, table_.cublasLtMatmulPreferenceSetAttribute, &status_) ? out : nullptr;
}

}  // namespace rgpu::server
