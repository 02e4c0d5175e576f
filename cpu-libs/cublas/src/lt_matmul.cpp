// cublasLtMatmul and its heuristic: the descriptors become one GemmSpec for
// the engine. Column-major, strided batches, host or device scalars, and the
// BIAS, RELU and GELU epilogues; every other feature is refused with
// CUBLAS_STATUS_NOT_SUPPORTED, so the heuristic finds no algorithm for it.
#include <cstring>

#include "api.h"
#include "convert.h"
#include "gemm.h"
#include "handle.h"
#include "job.h"
#include "lt_desc.h"

namespace rgpu::cpublas {

namespace {

// The one algorithm the stand-in has; its id in the algo's first word.
constexpr uint64_t kAlgoId = 0x72677075;  // "rgpu"

bool valid_op(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

bool layout_ok(const LayoutData& l) { return l.ld >= (l.rows > 1 ? int64_t(l.rows) : 1) && l.batch >= 1; }

// The GemmSpec of a matmul (pointers left null), or why there is none.
cublasStatus_t plan(const MatmulData& d, const LayoutData& a, const LayoutData& b, const LayoutData& c,
                    const LayoutData& out, GemmSpec* s) {
  for (const LayoutData* l : {&a, &b, &c, &out}) {
    if (l->order != CUBLASLT_ORDER_COL || l->batch_mode != CUBLASLT_BATCH_MODE_STRIDED || l->plane_offset != 0) {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (l->rows > uint64_t(INT64_MAX) || l->cols > uint64_t(INT64_MAX)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!layout_ok(*l)) return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!valid_op(d.transa) || !valid_op(d.transb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (d.transc != CUBLAS_OP_N || d.fill_mode != CUBLAS_FILL_MODE_FULL) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (d.pointer_mode != CUBLASLT_POINTER_MODE_HOST && d.pointer_mode != CUBLASLT_POINTER_MODE_DEVICE) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (d.a_scale || d.b_scale || d.c_scale || d.d_scale || d.amax_d || d.d_out_scale) {
    return CUBLAS_STATUS_NOT_SUPPORTED;  // fp8 scaling
  }
  switch (d.epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      break;
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      s->activation = Activation::kRelu;
      break;
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      s->activation = Activation::kGelu;
      break;
    case CUBLASLT_EPILOGUE_BIAS:
      break;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;  // aux outputs and gradients
  }
  const bool bias = d.epilogue & CUBLASLT_EPILOGUE_BIAS;

  const bool na = d.transa == CUBLAS_OP_N, nb = d.transb == CUBLAS_OP_N;
  s->op_a = cublasOperation_t(d.transa);
  s->op_b = cublasOperation_t(d.transb);
  s->m = int64_t(out.rows);
  s->n = int64_t(out.cols);
  s->k = int64_t(na ? a.cols : a.rows);
  if (int64_t(na ? a.rows : a.cols) != s->m || int64_t(nb ? b.rows : b.cols) != s->k ||
      int64_t(nb ? b.cols : b.rows) != s->n || c.rows != out.rows || c.cols != out.cols) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  s->batch = out.batch;
  for (const LayoutData* l : {&a, &b, &c}) {
    if (l->batch != out.batch && l->batch != 1) return CUBLAS_STATUS_INVALID_VALUE;
  }
  auto types = [](const LayoutData& l) { return cudaDataType(l.type); };
  if (a.type != b.type || c.type != out.type) return CUBLAS_STATUS_NOT_SUPPORTED;
  cudaDataType scale;
  if (!gemm_types(cublasComputeType_t(d.compute_type), types(a), types(out), &s->domain, &scale)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // Real matmuls take real scalars of any precision; complex ones their own type.
  const bool real = s->domain == Domain::kReal32 || s->domain == Domain::kReal64;
  const cudaDataType desc_scale = cudaDataType(d.scale_type);
  double probe = 0;
  const unsigned char zero[16] = {};
  if (real ? !scalar_to_double(zero, desc_scale, &probe) : desc_scale != scale) return CUBLAS_STATUS_NOT_SUPPORTED;
  s->scale_type = desc_scale;
  if ((bias || s->activation != Activation::kNone) && !real) return CUBLAS_STATUS_NOT_SUPPORTED;
  // A single matrix with batch count 1 is shared by every batch entry.
  s->a = {nullptr, types(a), a.ld, a.batch == 1 ? 0 : a.stride};
  s->b = {nullptr, types(b), b.ld, b.batch == 1 ? 0 : b.stride};
  s->c = {nullptr, types(c), c.ld, c.batch == 1 ? 0 : c.stride};
  s->d = {nullptr, types(out), out.ld, out.batch == 1 ? 0 : out.stride};
  if (bias) {
    s->bias_type = d.bias_data_type == -1 ? types(out) : cudaDataType(d.bias_data_type);
    if (!element_size(s->bias_type) || s->bias_type == CUDA_C_32F || s->bias_type == CUDA_C_64F) {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    s->bias_stride = d.bias_batch_stride;
  }
  s->device_scalars = d.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

}  // namespace rgpu::cpublas

using namespace rgpu::cpublas;

RGPU_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                          cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                          cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                          cublasLtMatmulPreference_t pref, int requested,
                                                          cublasLtMatmulHeuristicResult_t results[], int* returned) {
  return guarded("cublasLtMatmulAlgoGetHeuristic", [&]() -> cublasStatus_t {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !a || !b || !c || !d || !pref || !results || !returned || requested <= 0) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    *returned = 0;
    GemmSpec s;
    cublasStatus_t st = plan(*data(desc), *data(a), *data(b), *data(c), *data(d), &s);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    std::memset(&results[0], 0, sizeof results[0]);
    results[0].algo.data[0] = kAlgoId;
    results[0].workspaceSize = 0;  // the CPU needs none, whatever the preference allows
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// The algo (any, or none) and the workspace are accepted and not used.
RGPU_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                          const void* A, cublasLtMatrixLayout_t a, const void* B,
                                          cublasLtMatrixLayout_t b, const void* beta, const void* C,
                                          cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                          const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  return guarded("cublasLtMatmul", [&]() -> cublasStatus_t {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !a || !b || !c || !d || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    GemmSpec s;
    const MatmulData& md = *data(desc);
    cublasStatus_t st = plan(md, *data(a), *data(b), *data(c), *data(d), &s);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((md.epilogue & CUBLASLT_EPILOGUE_BIAS) && !md.bias) return CUBLAS_STATUS_INVALID_VALUE;
    s.a.ptr = A;
    s.b.ptr = B;
    s.c.ptr = C;
    s.d.ptr = D;
    s.alpha = alpha;
    s.beta = beta;
    s.bias = (md.epilogue & CUBLASLT_EPILOGUE_BIAS) ? md.bias : nullptr;
    ContextGuard guard(handle->ctx);
    if (!guard.ok()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return enqueue_gemm(s, reinterpret_cast<CUstream>(stream));
  });
}
