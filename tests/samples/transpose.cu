// transpose: a 300x200 matrix transposed naively and through a padded shared
// tile (32x33, no bank conflicts), with ragged edges.
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
      std::printf("FAIL transpose: %s\n", cudaGetErrorName(err_));                    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int TILE = 32;
constexpr int ROWS = 8;  // block is TILE x ROWS; each thread moves TILE/ROWS elements

// in is height x width, out is width x height, both row-major.
__global__ void transpose_naive(const float* in, float* out, int width, int height) {
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < width && y + j < height) out[x * height + (y + j)] = in[(y + j) * width + x];
}

__global__ void transpose_tiled(const float* in, float* out, int width, int height) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
  const int width = 300, height = 200;
  const size_t count = size_t(width) * height;
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = float(i);

  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, count * sizeof(float)));
  CHECK(cudaMalloc(&d_out, count * sizeof(float)));
  CHECK(cudaMemcpy(d_in, in.data(), count * sizeof(float), cudaMemcpyHostToDevice));

  dim3 block(TILE, ROWS);
  dim3 grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
  int bad = 0;
  for (int variant = 0; variant < 2; ++variant) {
    CHECK(cudaMemset(d_out, 0, count * sizeof(float)));
    if (variant == 0)
      transpose_naive<<<grid, block>>>(d_in, d_out, width, height);
    else
      transpose_tiled<<<grid, block>>>(d_in, d_out, width, height);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < height; ++r)
      for (int c = 0; c < width; ++c) {
        float got = out[size_t(c) * height + r], want = in[size_t(r) * width + c];
        if (got != want) {
          if (bad < 5) std::fprintf(stderr, "%s: out[%d][%d] = %f, expected %f\n",
                                    variant ? "tiled" : "naive", c, r, got, want);
          ++bad;
        }
      }
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  if (bad) {
    std::printf("FAIL transpose: %d elements wrong\n", bad);
    return 1;
  }
  std::printf("PASS transpose: %dx%d naive and tiled\n", height, width);
  return 0;
}
