// reduction: sums 100000 integers two ways (shared-memory tree per block, and
// warp shuffles), each finished by a second pass on the device, and takes the
// maximum; all checked against the host.
#include <climits>
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
      std::printf("FAIL reduction: %s\n", cudaGetErrorName(err_));                    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int THREADS = 256;

// Each block sums a grid-stride slice into out[blockIdx.x] with a tree in shared memory.
__global__ void sum_shared(const int* in, long long* out, int n) {
  __shared__ long long partial[THREADS];
  long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += in[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// The same with warp shuffles; used for the second pass too (in is long long).
template <typename T>
__global__ void sum_shuffle(const T* in, long long* out, int n) {
  __shared__ long long warp_sums[THREADS / 32];
  long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += in[i];
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) out[blockIdx.x] = s;
  }
}

__global__ void max_kernel(const int* in, int* result, int n) {
  int best = INT_MIN;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) best = max(best, in[i]);
  for (int offset = 16; offset > 0; offset >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, offset));
  if (threadIdx.x % 32 == 0) atomicMax(result, best);
}

int main() {
  const int n = 100000;
  const int blocks = 64;
  std::vector<int> h(n);
  long long expected_sum = 0;
  int expected_max = INT_MIN;
  for (int i = 0; i < n; ++i) {
    h[i] = int((i * 2654435761u) % 2001u) - 1000;
    expected_sum += h[i];
    expected_max = h[i] > expected_max ? h[i] : expected_max;
  }

  int *d_in, *d_max;
  long long *d_partial, *d_total;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(long long)));
  CHECK(cudaMalloc(&d_total, sizeof(long long)));
  CHECK(cudaMalloc(&d_max, sizeof(int)));
  CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  long long tree = 0, shuffle = 0;
  sum_shared<<<blocks, THREADS>>>(d_in, d_partial, n);
  CHECK(cudaGetLastError());
  sum_shuffle<long long><<<1, THREADS>>>(d_partial, d_total, blocks);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&tree, d_total, sizeof tree, cudaMemcpyDeviceToHost));

  sum_shuffle<int><<<blocks, THREADS>>>(d_in, d_partial, n);
  CHECK(cudaGetLastError());
  sum_shuffle<long long><<<1, THREADS>>>(d_partial, d_total, blocks);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&shuffle, d_total, sizeof shuffle, cudaMemcpyDeviceToHost));

  int init = INT_MIN, got_max = 0;
  CHECK(cudaMemcpy(d_max, &init, sizeof init, cudaMemcpyHostToDevice));
  max_kernel<<<blocks, THREADS>>>(d_in, d_max, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&got_max, d_max, sizeof got_max, cudaMemcpyDeviceToHost));

  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_total));
  CHECK(cudaFree(d_max));

  if (tree != expected_sum || shuffle != expected_sum || got_max != expected_max) {
    std::printf("FAIL reduction: tree=%lld shuffle=%lld expected=%lld max=%d expected=%d\n", tree, shuffle,
                expected_sum, got_max, expected_max);
    return 1;
  }
  std::printf("PASS reduction: sum=%lld max=%d over %d elements\n", expected_sum, expected_max, n);
  return 0;
}
