// Matrix transpose: naive, and through a padded shared tile (32x32 tile,
// 32x8 threads, each thread moving four elements).
#define TDIM 32
#define TROWS 8

extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

extern "C" __global__ void transpose_tiled(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[TDIM][TDIM + 1];
  int x = blockIdx.x * TDIM + threadIdx.x;
  int y = blockIdx.y * TDIM + threadIdx.y;
  for (int j = 0; j < TDIM; j += TROWS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TDIM + threadIdx.x;
  y = blockIdx.x * TDIM + threadIdx.y;
  for (int j = 0; j < TDIM; j += TROWS)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
