// Kernels of rgpu-bench, compiled to PTX at build time (nvcc -ptx) and loaded
// with cuModuleLoadData: an empty kernel for launch rates, and the kernels of
// the tiled matrix multiply and streams samples (tests/samples).
#define TILE 16

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int m, int n, int k) {
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

extern "C" __global__ void stream_work(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    for (int k = 0; k < 8; ++k) v = v * 0.5f + 1.0f;
    out[i] = v;
  }
}
