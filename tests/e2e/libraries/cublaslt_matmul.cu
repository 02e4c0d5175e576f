// A CUDA 13 program that links NVIDIA's cuBLASLt (-lcublasLt: it imports
// cublasLtMatmul@libcublasLt.so.13) and runs, through rgpu, on rgpud's CPU
// device and its cuBLASLt stand-in: what PyTorch's addmm with a bias does
// (the heuristic, then a matmul with the RELU_BIAS or GELU_BIAS epilogue and
// a workspace, A transposed), through a cuBLASLt handle and through a cuBLAS
// handle cast to one, a strided batch, the descriptors' attributes read back
// and their sizes checked, and a bias past its allocation refused. Prints
// "PASS cublaslt_matmul" when every result matches a reference on the host.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                             \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::printf("FAIL cublaslt_matmul: %s: %s\n", #x, cudaGetErrorString(e_));  \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
#define CHECK_BLAS(x)                                                                 \
  do {                                                                                \
    cublasStatus_t s_ = (x);                                                          \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
      std::printf("FAIL cublaslt_matmul: %s: status %d\n", #x, static_cast<int>(s_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

enum class Act { kRelu, kGelu };

float gelu(float x) {  // the tanh form cuBLASLt's GELU epilogue computes
  const double c = std::sqrt(2.0 / M_PI);
  return static_cast<float>(0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x))));
}

// D = act(alpha * A^T * B + beta * D + bias), column-major; A is k x m.
void reference(int m, int n, int k, float alpha, const float* a, const float* b, float beta, const float* bias,
               Act act, float* d) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += static_cast<double>(a[p + i * k]) * b[p + j * k];
      const float v = static_cast<float>(alpha * sum + beta * d[i + j * m] + bias[i]);
      d[i + j * m] = act == Act::kRelu ? (v > 0 ? v : 0) : gelu(v);
    }
  }
}

bool close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > 1e-4f * (1.0f + std::fabs(want[i]))) {
      std::printf("FAIL cublaslt_matmul: %s: element %zu is %g, want %g\n", what, i, got[i], want[i]);
      return false;
    }
  }
  return true;
}

float* device_copy(const std::vector<float>& host) {
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, host.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

std::vector<float> host_copy(const float* d, size_t n) {
  std::vector<float> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

std::vector<float> values(size_t n, float scale, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7 + seed) % 11) - 2.5f * scale;
  return v;
}

// One problem: D (m x n) = act(A^T B + bias) with A k x m, B k x n.
struct Problem {
  int m, n, k, batch;
  std::vector<float> a, b, bias, d;
  float *da, *db, *dbias, *dd;

  Problem(int m_, int n_, int k_, int batch_) : m(m_), n(n_), k(k_), batch(batch_) {
    a = values(size_t(k) * m * batch, 0.25f, 1);
    b = values(size_t(k) * n * batch, 0.5f, 3);
    bias = values(size_t(m) * batch, 1.0f, 5);
    d = values(size_t(m) * n * batch, 0.125f, 7);
    da = device_copy(a);
    db = device_copy(b);
    dbias = device_copy(bias);
    dd = device_copy(d);
  }
  ~Problem() {
    for (float* p : {da, db, dbias, dd}) cudaFree(p);
  }
  std::vector<float> want(float alpha, float beta, Act act) const {
    std::vector<float> out = d;
    for (int i = 0; i < batch; ++i) {
      reference(m, n, k, alpha, a.data() + size_t(i) * k * m, b.data() + size_t(i) * k * n, beta,
                bias.data() + size_t(i) * m, act, out.data() + size_t(i) * m * n);
    }
    return out;
  }
};

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, T v) {
  CHECK_BLAS(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}
template <class T>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, T v) {
  CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(l, a, &v, sizeof v));
}

// Runs the problem as PyTorch's gemm_and_bias does: heuristic, then matmul.
// Returns the matmul's status (the heuristic must succeed).
cublasStatus_t run(cublasLtHandle_t handle, const Problem& p, Act act, float alpha, float beta, const float* bias,
                   void* workspace, size_t workspace_size, cudaStream_t stream) {
  cublasLtMatmulDesc_t op = nullptr;
  CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_T});
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSB, int32_t{CUBLAS_OP_N});
  set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
           static_cast<uint32_t>(act == Act::kRelu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS));
  set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, p.k, p.m, p.k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, p.k, p.n, p.k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, p.m, p.n, p.m));
  if (p.batch > 1) {
    for (auto [l, stride] : {std::pair{la, int64_t(p.k) * p.m}, {lb, int64_t(p.k) * p.n}, {ld, int64_t(p.m) * p.n}}) {
      set_layout(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(p.batch));
      set_layout(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
    }
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t(p.m));
  }
  cublasLtMatmulPreference_t pref = nullptr;
  CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_size,
                                                  sizeof workspace_size));
  cublasLtMatmulHeuristicResult_t result = {};
  int returned = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, pref, 1, &result, &returned));
  if (returned != 1) {
    std::printf("FAIL cublaslt_matmul: the heuristic returned %d algorithms\n", returned);
    std::exit(1);
  }
  const cublasStatus_t st = cublasLtMatmul(handle, op, &alpha, p.da, la, p.db, lb, &beta, p.dd, ld, p.dd, ld,
                                           &result.algo, workspace, workspace_size, stream);
  CHECK_BLAS(cublasLtMatmulPreferenceDestroy(pref));
  for (cublasLtMatrixLayout_t l : {la, lb, ld}) CHECK_BLAS(cublasLtMatrixLayoutDestroy(l));
  CHECK_BLAS(cublasLtMatmulDescDestroy(op));
  return st;
}

// The descriptors' attributes as cuBLASLt sets and reads them.
bool attributes() {
  cublasLtMatmulDesc_t op = nullptr;
  CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int64_t wrong = 1;
  if (cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &wrong, sizeof wrong) !=
      CUBLAS_STATUS_INVALID_VALUE) {
    std::printf("FAIL cublaslt_matmul: an attribute of the wrong size was accepted\n");
    return false;
  }
  // cuBLASLt 12's atomic-sync attributes (27-30) are gone from cuBLASLt 13.
  const int32_t chunks = 4;
  if (cublasLtMatmulDescSetAttribute(op, static_cast<cublasLtMatmulDescAttributes_t>(27), &chunks, sizeof chunks) !=
      CUBLAS_STATUS_NOT_SUPPORTED) {
    std::printf("FAIL cublaslt_matmul: attribute 27 was not refused\n");
    return false;
  }
  size_t size = 0;
  CHECK_BLAS(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, nullptr, 0, &size));
  uint32_t epilogue = 0;
  CHECK_BLAS(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue, &size));
  int32_t scale = -1;
  CHECK_BLAS(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale, sizeof scale, nullptr));
  CHECK_BLAS(cublasLtMatmulDescDestroy(op));
  cublasLtMatrixLayout_t l = nullptr;
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 3, 4, 5));
  uint64_t rows = 0;
  CHECK_BLAS(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, nullptr));
  CHECK_BLAS(cublasLtMatrixLayoutDestroy(l));
  if (size != 4 || epilogue != CUBLASLT_EPILOGUE_DEFAULT || scale != CUDA_R_32F || rows != 3) {
    std::printf("FAIL cublaslt_matmul: attributes read back as size %zu epilogue %u scale %d rows %llu\n", size,
                epilogue, scale, static_cast<unsigned long long>(rows));
    return false;
  }
  return true;
}

}  // namespace

int main() {
  if (!attributes()) return 1;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  void* workspace = nullptr;
  const size_t workspace_size = 1 << 20;
  CHECK_CUDA(cudaMalloc(&workspace, workspace_size));

  // Through a cuBLASLt handle: ReLU and bias.
  cublasLtHandle_t lt = nullptr;
  CHECK_BLAS(cublasLtCreate(&lt));
  {
    Problem p(24, 16, 40, 1);
    CHECK_BLAS(run(lt, p, Act::kRelu, 0.75f, 0.5f, p.dbias, workspace, workspace_size, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    if (!close(host_copy(p.dd, p.d.size()), p.want(0.75f, 0.5f, Act::kRelu), "relu_bias")) return 1;
  }
  // Through a cuBLAS handle cast to a cuBLASLt handle (what PyTorch does):
  // GELU and bias, a strided batch of three, no workspace.
  cublasHandle_t blas = nullptr;
  CHECK_BLAS(cublasCreate(&blas));
  {
    Problem p(8, 12, 20, 3);
    CHECK_BLAS(run(reinterpret_cast<cublasLtHandle_t>(blas), p, Act::kGelu, 1.0f, 0.0f, p.dbias, nullptr, 0, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    if (!close(host_copy(p.dd, p.d.size()), p.want(1.0f, 0.0f, Act::kGelu), "gelu_bias_batched")) return 1;
  }
  // A bias reaching past its allocation is refused by rgpud before the
  // library sees it; the error surfaces at the next synchronizing call.
  {
    Problem p(24, 16, 40, 1);
    CHECK_BLAS(run(lt, p, Act::kRelu, 1.0f, 0.0f, p.dbias + 4, workspace, workspace_size, stream));
    if (cudaStreamSynchronize(stream) == cudaSuccess) {
      std::printf("FAIL cublaslt_matmul: a bias past its allocation was not refused\n");
      return 1;
    }
    (void)cudaGetLastError();
    // The session goes on.
    CHECK_BLAS(run(lt, p, Act::kRelu, 1.0f, 0.0f, p.dbias, workspace, workspace_size, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    if (!close(host_copy(p.dd, p.d.size()), p.want(1.0f, 0.0f, Act::kRelu), "after_refusal")) return 1;
  }
  CHECK_BLAS(cublasLtDestroy(lt));
  CHECK_BLAS(cublasDestroy(blas));
  CHECK_CUDA(cudaFree(workspace));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("PASS cublaslt_matmul\n");
  return 0;
}
