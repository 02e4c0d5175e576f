// error_handling: how CUDA reports errors. A bad launch configuration is
// reported by cudaGetLastError and cleared by it; API errors become the
// calling thread's last error; an out-of-bounds kernel fails the next
// synchronization with cudaErrorIllegalAddress, which stays until
// cudaDeviceReset.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL error_handling: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

static int failures = 0;

#define EXPECT_ERR(call, want)                                                          \
  do {                                                                                  \
    cudaError_t got_ = (call);                                                          \
    if (got_ != (want)) {                                                               \
      std::fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__,   \
                   #call, cudaGetErrorName(got_), cudaGetErrorName(want));              \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

__global__ void write_index(int* p, long long offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[offset + i] = i;
}

static int check_values(const int* d, int n) {
  int* h = static_cast<int*>(std::malloc(n * sizeof(int)));
  CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += h[i] != i;
  std::free(h);
  return bad;
}

int main() {
  const int n = 1024;
  int* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  EXPECT_ERR(cudaGetLastError(), cudaSuccess);

  // Too many threads per block: the launch fails at once.
  write_index<<<1, 4096>>>(d, 0, n);
  EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_ERR(cudaGetLastError(), cudaSuccess);  // cleared by the previous call

  // An empty grid: peeking does not clear, getting does.
  write_index<<<0, 32>>>(d, 0, n);
  EXPECT_ERR(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_ERR(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_ERR(cudaPeekAtLastError(), cudaSuccess);

  // Neither failed launch harmed the context.
  write_index<<<(n + 255) / 256, 256>>>(d, 0, n);
  EXPECT_ERR(cudaGetLastError(), cudaSuccess);
  EXPECT_ERR(cudaDeviceSynchronize(), cudaSuccess);
  if (check_values(d, n) != 0) {
    std::fprintf(stderr, "good launch after bad ones wrote wrong values\n");
    ++failures;
  }

  // A failing API call becomes the last error of the calling thread only.
  void* huge = nullptr;
  EXPECT_ERR(cudaMalloc(&huge, size_t(1) << 50), cudaErrorMemoryAllocation);
  cudaError_t seen_by_other_thread = cudaErrorUnknown;
  std::thread other([&] { seen_by_other_thread = cudaGetLastError(); });
  other.join();
  if (seen_by_other_thread != cudaSuccess) {
    std::fprintf(stderr, "another thread saw %s\n", cudaGetErrorName(seen_by_other_thread));
    ++failures;
  }
  EXPECT_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_ERR(cudaGetLastError(), cudaSuccess);
  int host_value = 0;
  EXPECT_ERR(cudaMemcpy(&host_value, d, sizeof(int), static_cast<cudaMemcpyKind>(99)),
             cudaErrorInvalidMemcpyDirection);
  EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);

  if (std::strcmp(cudaGetErrorName(cudaErrorInvalidConfiguration), "cudaErrorInvalidConfiguration") != 0 ||
      std::strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress") != 0 ||
      std::strcmp(cudaGetErrorString(cudaSuccess), "no error") != 0) {
    std::fprintf(stderr, "error names: %s / %s / %s\n", cudaGetErrorName(cudaErrorInvalidConfiguration),
                 cudaGetErrorName(cudaErrorIllegalAddress), cudaGetErrorString(cudaSuccess));
    ++failures;
  }

  // Out of bounds by a gigabyte: the launch itself is accepted, the fault
  // shows at the next synchronization and is sticky.
  write_index<<<4, 256>>>(d, 1LL << 28, n);
  EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  void* after = nullptr;
  EXPECT_ERR(cudaMalloc(&after, 256), cudaErrorIllegalAddress);
  EXPECT_ERR(cudaMemcpy(&host_value, d, sizeof(int), cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
  EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);

  // cudaDeviceReset gives the process a fresh context.
  CHECK(cudaDeviceReset());
  int* fresh = nullptr;
  CHECK(cudaMalloc(&fresh, n * sizeof(int)));
  write_index<<<(n + 255) / 256, 256>>>(fresh, 0, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  if (check_values(fresh, n) != 0) {
    std::fprintf(stderr, "launch after cudaDeviceReset wrote wrong values\n");
    ++failures;
  }
  CHECK(cudaFree(fresh));

  if (failures) {
    std::printf("FAIL error_handling: %d unexpected results\n", failures);
    return 1;
  }
  std::printf("PASS error_handling: configuration, api, per-thread and sticky errors\n");
  return 0;
}
