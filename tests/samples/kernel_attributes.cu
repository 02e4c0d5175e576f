// kernel_attributes: what the runtime says about a kernel before launching it
// (cudaFuncGetAttributes, occupancy, cudaFuncSetAttribute), then a launch with
// the block size the occupancy calculator suggests.
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
      std::printf("FAIL kernel_attributes: %s\n", cudaGetErrorName(err_));            \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int MAX_THREADS = 128;
constexpr int STAGE = 256;  // floats of static shared memory

// Each block stages a slice in static shared memory and writes it back doubled
// and rotated by one, so the shared array cannot be optimized away.
__global__ void __launch_bounds__(MAX_THREADS) staged(const float* in, float* out, int n) {
  __shared__ float stage[STAGE];
  int base = blockIdx.x * blockDim.x;
  for (int t = threadIdx.x; t < STAGE; t += blockDim.x) stage[t] = 0.0f;
  __syncthreads();
  if (base + threadIdx.x < n) stage[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  int src = (threadIdx.x + 1) % blockDim.x;
  if (base + threadIdx.x < n) out[base + threadIdx.x] = 2.0f * stage[src];
}

// Uses only dynamic shared memory, sized at launch.
__global__ void dynamic_sum(const int* in, int* out, int per_block) {
  extern __shared__ int buf[];
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) buf[i] = in[blockIdx.x * per_block + i];
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int i = 0; i < per_block; ++i) s += buf[i];
    out[blockIdx.x] = s;
  }
}

int main() {
  int failures = 0;
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, staged));
  std::printf("staged: maxThreadsPerBlock=%d sharedSizeBytes=%zu numRegs=%d ptxVersion=%d binaryVersion=%d\n",
              attr.maxThreadsPerBlock, attr.sharedSizeBytes, attr.numRegs, attr.ptxVersion, attr.binaryVersion);
  if (attr.maxThreadsPerBlock <= 0 || attr.maxThreadsPerBlock > MAX_THREADS) {
    std::fprintf(stderr, "maxThreadsPerBlock %d ignores __launch_bounds__(%d)\n", attr.maxThreadsPerBlock, MAX_THREADS);
    ++failures;
  }
  if (attr.sharedSizeBytes != STAGE * sizeof(float)) {
    std::fprintf(stderr, "sharedSizeBytes %zu, expected %zu\n", attr.sharedSizeBytes, STAGE * sizeof(float));
    ++failures;
  }
  if (attr.ptxVersion <= 0 && attr.binaryVersion <= 0) {
    std::fprintf(stderr, "no ptx or binary version\n");
    ++failures;
  }

  int active = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, staged, MAX_THREADS, 0));
  int min_grid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, staged, 0, 0));
  std::printf("occupancy: %d active blocks of %d, suggested block %d, min grid %d\n", active, MAX_THREADS, block,
              min_grid);
  if (active < 1 || block < 32 || block > MAX_THREADS || block % 32 != 0 || min_grid < 1) {
    std::fprintf(stderr, "implausible occupancy answer\n");
    ++failures;
  }
  // A block above the kernel's limit cannot be resident at all.
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, staged, 2 * MAX_THREADS, 0);
  if (e == cudaSuccess && active != 0) {
    std::fprintf(stderr, "occupancy of an oversized block: %d\n", active);
    ++failures;
  }
  (void)cudaGetLastError();

  // Launch with the suggested block size; an oversized block is refused.
  const int n = 5000;
  std::vector<float> h(n), out(n);
  for (int i = 0; i < n; ++i) h[i] = float(i);
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  if (block < 1 || block > MAX_THREADS) block = MAX_THREADS;
  staged<<<(n + block - 1) / block, block>>>(d_in, d_out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int base = i / block * block, t = i - base;
    int width = n - base < block ? n - base : block;
    int src = (t + 1) % block;
    // In the ragged last block, lanes past the end staged zeros.
    float want = src < width ? 2.0f * h[base + src] : 0.0f;
    if (out[i] != want) {
      if (failures < 5) std::fprintf(stderr, "out[%d] = %f, expected %f\n", i, out[i], want);
      ++failures;
    }
  }
  staged<<<1, 2 * MAX_THREADS>>>(d_in, d_out, n);
  e = cudaGetLastError();
  if (e == cudaSuccess) {
    std::fprintf(stderr, "a launch above __launch_bounds__ was accepted\n");
    ++failures;
  }
  CHECK(cudaDeviceSynchronize());

  // Opt in to more dynamic shared memory than the default 48 KiB would need, then use 16 KiB of it.
  CHECK(cudaFuncSetAttribute(dynamic_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * 1024));
  CHECK(cudaFuncGetAttributes(&attr, dynamic_sum));
  if (attr.maxDynamicSharedSizeBytes != 32 * 1024) {
    std::fprintf(stderr, "maxDynamicSharedSizeBytes %d after setting 32768\n", attr.maxDynamicSharedSizeBytes);
    ++failures;
  }
  const int per_block = 4096, blocks = 3;
  std::vector<int> hv(per_block * blocks), sums(blocks);
  for (int i = 0; i < per_block * blocks; ++i) hv[i] = i % 10;
  int *d_v, *d_s;
  CHECK(cudaMalloc(&d_v, hv.size() * sizeof(int)));
  CHECK(cudaMalloc(&d_s, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_v, hv.data(), hv.size() * sizeof(int), cudaMemcpyHostToDevice));
  dynamic_sum<<<blocks, 128, per_block * sizeof(int)>>>(d_v, d_s, per_block);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sums.data(), d_s, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int want = 0;
    for (int i = 0; i < per_block; ++i) want += hv[b * per_block + i];
    if (sums[b] != want) {
      std::fprintf(stderr, "block %d sum %d, expected %d\n", b, sums[b], want);
      ++failures;
    }
  }

  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_v));
  CHECK(cudaFree(d_s));
  if (failures) {
    std::printf("FAIL kernel_attributes: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS kernel_attributes: attributes, occupancy, block %d\n", block);
  return 0;
}
