// scan: inclusive prefix sum of 60000 integers: each block scans its slice in
// shared memory, the block totals are scanned by one block, then added back.
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
      std::printf("FAIL scan: %s\n", cudaGetErrorName(err_));                         \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int THREADS = 256;

// Hillis-Steele inclusive scan of one block's slice; the block's total goes
// to block_sums when it is given.
__global__ void scan_blocks(const int* in, int* out, int* block_sums, int n) {
  __shared__ int s[THREADS];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  s[tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset <<= 1) {
    int v = tid >= offset ? s[tid - offset] : 0;
    __syncthreads();
    s[tid] += v;
    __syncthreads();
  }
  if (i < n) out[i] = s[tid];
  if (block_sums != nullptr && tid == blockDim.x - 1) block_sums[blockIdx.x] = s[tid];
}

__global__ void add_block_offsets(int* out, const int* scanned_sums, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}

int main() {
  const int n = 60000;
  const int blocks = (n + THREADS - 1) / THREADS;  // 235: its totals fit one block
  std::vector<int> h(n), out(n), ref(n);
  int running = 0;
  for (int i = 0; i < n; ++i) {
    h[i] = (i % 13) - 4;
    running += h[i];
    ref[i] = running;
  }

  int *d_in, *d_out, *d_sums;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sums, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  scan_blocks<<<blocks, THREADS>>>(d_in, d_out, d_sums, n);
  CHECK(cudaGetLastError());
  scan_blocks<<<1, THREADS>>>(d_sums, d_sums, nullptr, blocks);
  CHECK(cudaGetLastError());
  add_block_offsets<<<blocks, THREADS>>>(d_out, d_sums, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_sums));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (out[i] != ref[i]) {
      if (bad < 5) std::fprintf(stderr, "out[%d] = %d, expected %d\n", i, out[i], ref[i]);
      ++bad;
    }
  }
  if (bad) {
    std::printf("FAIL scan: %d of %d prefix sums wrong\n", bad, n);
    return 1;
  }
  std::printf("PASS scan: %d elements, total %d\n", n, ref[n - 1]);
  return 0;
}
