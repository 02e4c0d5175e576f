// dynamic_shared: extern __shared__ arrays sized by the launch: per-block
// reversal at several sizes, and two arrays of different types carved out of
// one dynamic allocation.
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
      std::printf("FAIL dynamic_shared: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// Reverses each block-sized slice of data in place.
__global__ void reverse_blocks(int* data, int n) {
  extern __shared__ int s[];
  int base = blockIdx.x * blockDim.x;
  int t = threadIdx.x;
  if (base + t < n) s[t] = data[base + t];
  __syncthreads();
  int width = min(int(blockDim.x), n - base);
  if (t < width) data[base + t] = s[width - 1 - t];
}

// Dynamic shared memory holds `count` doubles followed by `count` ints.
__global__ void weighted_pairs(const double* w, const int* v, double* out, int count) {
  extern __shared__ double pool[];
  double* sw = pool;
  int* sv = reinterpret_cast<int*>(pool + count);
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    sw[i] = w[blockIdx.x * count + i];
    sv[i] = v[blockIdx.x * count + i];
  }
  __syncthreads();
  // Each thread pairs element i with its mirror.
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    out[blockIdx.x * count + i] = sw[i] * sv[count - 1 - i];
}

int main() {
  int failures = 0;
  const int n = 10000;
  for (int threads : {32, 100, 256, 512}) {
    std::vector<int> h(n), out(n);
    for (int i = 0; i < n; ++i) h[i] = i * 3 + 1;
    int* d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int blocks = (n + threads - 1) / threads;
    reverse_blocks<<<blocks, threads, threads * sizeof(int)>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d));
    for (int b = 0; b < blocks; ++b) {
      int base = b * threads, width = n - base < threads ? n - base : threads;
      for (int t = 0; t < width; ++t) {
        if (out[base + t] != h[base + width - 1 - t]) {
          if (failures < 5) std::fprintf(stderr, "threads=%d: out[%d] = %d, expected %d\n", threads, base + t,
                                         out[base + t], h[base + width - 1 - t]);
          ++failures;
        }
      }
    }
  }

  const int blocks = 6, count = 700;
  std::vector<double> w(blocks * count), out(blocks * count);
  std::vector<int> v(blocks * count);
  for (int i = 0; i < blocks * count; ++i) {
    w[i] = 0.5 * (i % 11);
    v[i] = i % 23 - 11;
  }
  double *dw, *dout;
  int* dv;
  CHECK(cudaMalloc(&dw, w.size() * sizeof(double)));
  CHECK(cudaMalloc(&dv, v.size() * sizeof(int)));
  CHECK(cudaMalloc(&dout, out.size() * sizeof(double)));
  CHECK(cudaMemcpy(dw, w.data(), w.size() * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, v.data(), v.size() * sizeof(int), cudaMemcpyHostToDevice));
  size_t shared = count * (sizeof(double) + sizeof(int));
  weighted_pairs<<<blocks, 128, shared>>>(dw, dv, dout, count);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < count; ++i) {
      double want = w[b * count + i] * v[b * count + count - 1 - i];
      if (out[b * count + i] != want) {
        if (failures < 5) std::fprintf(stderr, "pairs: out[%d] = %f, expected %f\n", b * count + i,
                                       out[b * count + i], want);
        ++failures;
      }
    }
  CHECK(cudaFree(dw));
  CHECK(cudaFree(dv));
  CHECK(cudaFree(dout));
  if (failures) {
    std::printf("FAIL dynamic_shared: %d elements wrong\n", failures);
    return 1;
  }
  std::printf("PASS dynamic_shared: reversal at 4 block sizes, %zu-byte mixed pool\n", shared);
  return 0;
}
