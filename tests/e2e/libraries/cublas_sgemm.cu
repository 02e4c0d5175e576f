// A CUDA 13 program that links NVIDIA's cuBLAS (-lcublas: it imports
// cublasSgemm_v2@libcublas.so.13) and runs, through rgpu, on rgpud's CPU
// device and its cuBLAS stand-in: gemms with host and device scalars and
// transposes, a strided batch, gemv and a dot, the stream, pointer and math
// modes. Prints "PASS cublas_sgemm" when every result matches a reference.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("FAIL cublas_sgemm: %s: %s\n", #x, cudaGetErrorString(e_));  \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_BLAS(x)                                                          \
  do {                                                                         \
    cublasStatus_t s_ = (x);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::printf("FAIL cublas_sgemm: %s: status %d\n", #x, static_cast<int>(s_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

// C = alpha * op(A) * op(B) + beta * C, column-major, the reference.
void gemm_ref(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
              float beta, float* c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const float av = ta ? a[p + i * lda] : a[i + p * lda];
        const float bv = tb ? b[j + p * ldb] : b[p + j * ldb];
        sum += static_cast<double>(av) * bv;
      }
      c[i + j * ldc] = static_cast<float>(alpha * sum + beta * c[i + j * ldc]);
    }
  }
}

bool close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > 1e-4f * (1.0f + std::fabs(want[i]))) {
      std::printf("FAIL cublas_sgemm: %s: element %zu is %g, want %g\n", what, i, got[i], want[i]);
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

std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 2.0f;
  return v;
}

}  // namespace

int main() {
  const int m = 33, n = 17, k = 21;
  std::vector<float> a = values(static_cast<size_t>(m) * k, 0.25f);   // m x k
  std::vector<float> at = values(static_cast<size_t>(k) * m, 0.5f);   // k x m, used as op(A) = A^T
  std::vector<float> b = values(static_cast<size_t>(k) * n, 0.125f);  // k x n
  std::vector<float> c = values(static_cast<size_t>(m) * n, 1.0f);    // m x n
  float* da = device_copy(a);
  float* dat = device_copy(at);
  float* db = device_copy(b);
  float* dc = device_copy(c);

  cublasHandle_t handle = nullptr;
  CHECK_BLAS(cublasCreate(&handle));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_BLAS(cublasSetStream(handle, stream));
  CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  CHECK_BLAS(cublasGetMathMode(handle, &math));
  if (math != CUBLAS_TF32_TENSOR_OP_MATH) {
    std::printf("FAIL cublas_sgemm: math mode %d\n", static_cast<int>(math));
    return 1;
  }
  CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));

  // Host scalars, no transpose.
  float alpha = 1.5f, beta = 0.5f;
  CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, m, db, k, &beta, dc, m));
  std::vector<float> want = c;
  gemm_ref(false, false, m, n, k, alpha, a.data(), m, b.data(), k, beta, want.data(), m);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!close(host_copy(dc, want.size()), want, "sgemm NN")) return 1;

  // op(A) = A^T, beta 0.
  alpha = -0.75f;
  beta = 0.0f;
  CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, dat, k, db, k, &beta, dc, m));
  gemm_ref(true, false, m, n, k, alpha, at.data(), k, b.data(), k, beta, want.data(), m);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!close(host_copy(dc, want.size()), want, "sgemm TN")) return 1;

  // Device scalars.
  std::vector<float> scalars = {2.0f, -1.0f};
  float* dscalars = device_copy(scalars);
  CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
  CHECK_BLAS(cublasGetPointerMode(handle, &mode));
  if (mode != CUBLAS_POINTER_MODE_DEVICE) {
    std::printf("FAIL cublas_sgemm: pointer mode %d\n", static_cast<int>(mode));
    return 1;
  }
  CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dscalars, da, m, db, k, dscalars + 1, dc, m));
  gemm_ref(false, false, m, n, k, 2.0f, a.data(), m, b.data(), k, -1.0f, want.data(), m);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!close(host_copy(dc, want.size()), want, "sgemm device scalars")) return 1;
  CHECK_BLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));

  // Two gemms in one strided batch: C_i = A_i * B (B shared: stride 0).
  const long long stride_a = static_cast<long long>(m) * k, stride_c = static_cast<long long>(m) * n;
  std::vector<float> a2 = values(static_cast<size_t>(2 * stride_a), 0.375f);
  std::vector<float> c2(static_cast<size_t>(2 * stride_c), 0.0f);
  float* da2 = device_copy(a2);
  float* dc2 = device_copy(c2);
  alpha = 1.0f;
  beta = 0.0f;
  CHECK_BLAS(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da2, m, stride_a, db, k, 0,
                                       &beta, dc2, m, stride_c, 2));
  std::vector<float> want2 = c2;
  for (int i = 0; i < 2; ++i) {
    gemm_ref(false, false, m, n, k, alpha, a2.data() + i * stride_a, m, b.data(), k, beta, want2.data() + i * stride_c,
             m);
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!close(host_copy(dc2, want2.size()), want2, "sgemm strided batched")) return 1;

  // y = A x (gemv) and a dot with its result on the host.
  std::vector<float> x = values(k, 0.5f), y(m, 0.0f);
  float* dx = device_copy(x);
  float* dy = device_copy(y);
  CHECK_BLAS(cublasSgemv(handle, CUBLAS_OP_N, m, k, &alpha, da, m, dx, 1, &beta, dy, 1));
  std::vector<float> wanty = y;
  gemm_ref(false, false, m, 1, k, alpha, a.data(), m, x.data(), k, beta, wanty.data(), m);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!close(host_copy(dy, m), wanty, "sgemv")) return 1;
  float dot = 0;
  CHECK_BLAS(cublasSdot(handle, k, dx, 1, dx, 1, &dot));
  double want_dot = 0;
  for (float v : x) want_dot += static_cast<double>(v) * v;
  if (!close({dot}, {static_cast<float>(want_dot)}, "sdot")) return 1;

  // A gemm reaching past its allocation is refused by rgpud before the
  // library sees it; the error surfaces at the next synchronizing call.
  CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, m * 100, db, k, &beta, dc, m));
  const cudaError_t late = cudaStreamSynchronize(stream);
  if (late == cudaSuccess) {
    std::printf("FAIL cublas_sgemm: a gemm past its allocation was not refused\n");
    return 1;
  }
  (void)cudaGetLastError();
  // The session goes on.
  CHECK_BLAS(cublasSdot(handle, k, dx, 1, dx, 1, &dot));

  CHECK_BLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(stream));
  for (float* p : {da, dat, db, dc, dscalars, da2, dc2, dx, dy}) CHECK_CUDA(cudaFree(p));
  std::printf("PASS cublas_sgemm\n");
  return 0;
}
