// histogram: 256-bin histogram of 100000 skewed bytes, once with atomics on
// global memory and once privatized per block in shared memory.
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
      std::printf("FAIL histogram: %s\n", cudaGetErrorName(err_));                    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int BINS = 256;

__global__ void histogram_global(const unsigned char* data, int n, unsigned int* bins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[data[i]], 1u);
}

__global__ void histogram_shared(const unsigned char* data, int n, unsigned int* bins) {
  __shared__ unsigned int local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
}

int main() {
  const int n = 100000;
  std::vector<unsigned char> data(n);
  std::vector<unsigned int> ref(BINS, 0);
  for (int i = 0; i < n; ++i) {
    // A third of the values land in bin 7 so that atomics really collide.
    unsigned char v = (i % 3 == 0) ? 7 : static_cast<unsigned char>((i * 37u + (i >> 5)) & 0xff);
    data[i] = v;
    ref[v]++;
  }

  unsigned char* d_data;
  unsigned int* d_bins;
  CHECK(cudaMalloc(&d_data, n));
  CHECK(cudaMalloc(&d_bins, BINS * sizeof(unsigned int)));
  CHECK(cudaMemcpy(d_data, data.data(), n, cudaMemcpyHostToDevice));

  int bad = 0;
  for (int variant = 0; variant < 2; ++variant) {
    CHECK(cudaMemset(d_bins, 0, BINS * sizeof(unsigned int)));
    if (variant == 0)
      histogram_global<<<40, 256>>>(d_data, n, d_bins);
    else
      histogram_shared<<<40, 256>>>(d_data, n, d_bins);
    CHECK(cudaGetLastError());
    std::vector<unsigned int> bins(BINS);
    CHECK(cudaMemcpy(bins.data(), d_bins, BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < BINS; ++b) {
      if (bins[b] != ref[b]) {
        if (bad < 5)
          std::fprintf(stderr, "%s: bin %d = %u, expected %u\n", variant ? "shared" : "global", b, bins[b], ref[b]);
        ++bad;
      }
    }
  }
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_bins));
  if (bad) {
    std::printf("FAIL histogram: %d bins wrong\n", bad);
    return 1;
  }
  std::printf("PASS histogram: %d bytes, bin 7 holds %u\n", n, ref[7]);
  return 0;
}
