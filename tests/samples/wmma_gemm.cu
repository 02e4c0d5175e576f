// wmma_gemm: D = alpha A B + beta C on tensor cores through nvcuda::wmma
// (<mma.h>), as cudaTensorCoreGemm and immaTensorCoreGemm compute it: a
// 64x64x64 product with f16 inputs and f32 accumulators (16x16x16 tiles, the
// B tiles staged in shared memory), and one with s8 inputs and s32
// accumulators (32x8x16 tiles). One warp computes each tile of D, several
// warps a block; alpha and beta are applied element by element to the
// accumulator fragments. Small-integer and half-integer inputs make the host
// comparison exact.
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL wmma_gemm: %s\n", cudaGetErrorName(err_));                    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

using namespace nvcuda;

constexpr int M = 64, N = 64, K = 64;
constexpr int kWarpsPerBlock = 4;

// A is M x K by rows, B K x N by columns, C and D M x N by rows.
__global__ void hgemm(const half* A, const half* B, const float* C, float* D, float alpha, float beta) {
  __shared__ half Bs[kWarpsPerBlock][16 * K];  // each warp's 16 columns of B
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int warp = blockIdx.x * kWarpsPerBlock + w;
  const int tm = warp / (N / 16), tn = warp % (N / 16);
  for (int i = lane; i < 16 * K; i += 32) Bs[w][i] = B[tn * 16 * K + i];
  __syncwarp();

  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, &Bs[w][k], K);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::load_matrix_sync(c, C + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] = alpha * acc.x[i] + beta * c.x[i];
  wmma::store_matrix_sync(D + tm * 16 * N + tn * 16, c, N, wmma::mem_row_major);
}

// A is M x K by rows, B K x N by rows, C M x N by columns, D M x N by rows.
__global__ void igemm(const signed char* A, const signed char* B, const int* C, int* D, int alpha, int beta) {
  const int warp = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int tm = warp / (N / 8), tn = warp % (N / 8);
  wmma::fragment<wmma::matrix_a, 32, 8, 16, signed char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, signed char, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 32, 8, 16, int> acc, c;
  wmma::fill_fragment(acc, 0);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tm * 32 * K + k, K);
    wmma::load_matrix_sync(b, B + k * N + tn * 8, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::load_matrix_sync(c, C + tn * 8 * M + tm * 32, M, wmma::mem_col_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] = alpha * acc.x[i] + beta * c.x[i];
  wmma::store_matrix_sync(D + tm * 32 * N + tn * 8, c, N, wmma::mem_row_major);
}

template <class T>
static T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, v.size() * sizeof(T)));
  CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// Waits for the kernel, reads D back, frees everything and counts the
// elements that differ from `ref` (the first five are printed).
template <class T>
static int check(const char* name, T* dD, const std::vector<T>& ref, std::initializer_list<void*> inputs) {
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<T> D(ref.size());
  CHECK(cudaMemcpy(D.data(), dD, D.size() * sizeof(T), cudaMemcpyDeviceToHost));
  for (void* p : inputs) CHECK(cudaFree(p));
  CHECK(cudaFree(dD));
  int bad = 0;
  for (size_t i = 0; i < D.size(); ++i) {
    if (D[i] != ref[i] && bad++ < 5) {
      std::fprintf(stderr, "%s: D[%zu] = %g, expected %g\n", name, i, double(D[i]), double(ref[i]));
    }
  }
  return bad;
}

static int run_hgemm() {
  std::vector<float> A(M * K), B(K * N), C(M * N), ref(M * N);  // B by columns
  for (int i = 0; i < M * K; ++i) A[i] = float((i * 7) % 9 - 4) * 0.5f;
  for (int i = 0; i < K * N; ++i) B[i] = float((i * 5) % 7 - 3) * 0.5f;
  for (int i = 0; i < M * N; ++i) C[i] = float((i * 3) % 11 - 5);
  const float alpha = 2.0f, beta = -0.5f;
  for (int r = 0; r < M; ++r)
    for (int n = 0; n < N; ++n) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[r * K + k] * B[n * K + k];
      ref[r * N + n] = alpha * s + beta * C[r * N + n];
    }
  std::vector<half> Ah(A.size()), Bh(B.size());
  for (size_t i = 0; i < A.size(); ++i) Ah[i] = __float2half(A[i]);
  for (size_t i = 0; i < B.size(); ++i) Bh[i] = __float2half(B[i]);
  half* dA = to_device(Ah);
  half* dB = to_device(Bh);
  float* dC = to_device(C);
  float* dD = to_device(std::vector<float>(M * N, -999.0f));
  hgemm<<<(M / 16) * (N / 16) / kWarpsPerBlock, 32 * kWarpsPerBlock>>>(dA, dB, dC, dD, alpha, beta);
  return check("hgemm", dD, ref, {dA, dB, dC});
}

static int run_igemm() {
  std::vector<signed char> A(M * K), B(K * N);
  std::vector<int> C(M * N), ref(M * N);  // C by columns, ref (D) by rows
  for (int i = 0; i < M * K; ++i) A[i] = static_cast<signed char>((i * 37) % 255 - 127);
  for (int i = 0; i < K * N; ++i) B[i] = static_cast<signed char>((i * 53) % 251 - 125);
  for (int i = 0; i < M * N; ++i) C[i] = (i * 1009) % 20001 - 10000;
  const int alpha = 3, beta = -2;
  for (int r = 0; r < M; ++r)
    for (int n = 0; n < N; ++n) {
      int s = 0;
      for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + n];
      ref[r * N + n] = alpha * s + beta * C[n * M + r];
    }
  signed char* dA = to_device(A);
  signed char* dB = to_device(B);
  int* dC = to_device(C);
  int* dD = to_device(std::vector<int>(M * N, -1));
  igemm<<<(M / 32) * (N / 8) / kWarpsPerBlock, 32 * kWarpsPerBlock>>>(dA, dB, dC, dD, alpha, beta);
  return check("igemm", dD, ref, {dA, dB, dC});
}

int main() {
  const int bad_h = run_hgemm(), bad_i = run_igemm();
  if (bad_h || bad_i) {
    std::printf("FAIL wmma_gemm: %d f16 and %d s8 elements wrong\n", bad_h, bad_i);
    return 1;
  }
  std::printf("PASS wmma_gemm\n");
  return 0;
}
