// matmul_tiled: C = A * B with 16x16 tiles staged in shared memory, on a
// square 128x128 product and on a ragged one whose sizes are not multiples of
// the tile; integer-valued inputs make the host comparison exact.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL matmul_tiled: %s\n", cudaGetErrorName(err_));                 \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int TILE = 16;

// A is m x k, B is k x n, C is m x n, all row-major.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < (k + TILE - 1) / TILE; ++t) {
    int a_col = t * TILE + threadIdx.x;
    int b_row = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < m && a_col < k) ? A[row * k + a_col] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (b_row < k && col < n) ? B[b_row * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) sum += As[threadIdx.y][i] * Bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = sum;
}

static int run_case(int m, int n, int k) {
  std::vector<float> A(size_t(m) * k), B(size_t(k) * n), C(size_t(m) * n, -1.0f), ref(size_t(m) * n, 0.0f);
  for (int i = 0; i < m * k; ++i) A[i] = float((i * 7) % 5 - 2);
  for (int i = 0; i < k * n; ++i) B[i] = float((i * 3) % 7 - 3);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      float s = 0.0f;
      for (int i = 0; i < k; ++i) s += A[r * k + i] * B[i * n + c];
      ref[r * n + c] = s;
    }

  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, A.size() * sizeof(float)));
  CHECK(cudaMalloc(&dB, B.size() * sizeof(float)));
  CHECK(cudaMalloc(&dC, C.size() * sizeof(float)));
  CHECK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dC, 0xff, C.size() * sizeof(float)));

  dim3 block(TILE, TILE);
  dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul_tiled<<<grid, block>>>(dA, dB, dC, m, n, k);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));

  int bad = 0;
  for (size_t i = 0; i < C.size(); ++i) {
    if (C[i] != ref[i]) {
      if (bad < 5) std::fprintf(stderr, "%dx%dx%d: C[%zu] = %f, expected %f\n", m, n, k, i, C[i], ref[i]);
      ++bad;
    }
  }
  return bad;
}

int main() {
  int bad = run_case(128, 128, 128);
  bad += run_case(70, 50, 33);
  if (bad) {
    std::printf("FAIL matmul_tiled: %d elements wrong\n", bad);
    return 1;
  }
  std::printf("PASS matmul_tiled: 128x128x128 and 70x50x33\n");
  return 0;
}
