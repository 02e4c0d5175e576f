// memset: cudaMemset and cudaMemsetAsync fill bytes, at unaligned offsets and
// odd lengths, leaving the bytes around them alone.
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
      std::printf("FAIL memset: %s\n", cudaGetErrorName(err_));                       \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void count_value(const int* p, int n, int value, int* count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && p[i] == value) atomicAdd(count, 1);
}

int main() {
  const size_t bytes = 100003;  // not a multiple of anything useful
  unsigned char* d;
  CHECK(cudaMalloc(&d, bytes));
  std::vector<unsigned char> ref(bytes), got(bytes);
  int failures = 0;

  CHECK(cudaMemset(d, 0xab, bytes));
  for (auto& b : ref) b = 0xab;

  struct Fill { size_t offset, length; int value; };
  const Fill fills[] = {{1, 1, 0x00}, {3, 17, 0x5c}, {4096, 8192, 0xff}, {bytes - 7, 7, 0x11}, {999, 30001, 0x100 + 0x42}};
  for (const Fill& f : fills) {
    CHECK(cudaMemset(d + f.offset, f.value, f.length));
    for (size_t i = 0; i < f.length; ++i) ref[f.offset + i] = static_cast<unsigned char>(f.value);  // low byte only
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemsetAsync(d + 50000, 0x7e, 12345, stream));
  for (size_t i = 0; i < 12345; ++i) ref[50000 + i] = 0x7e;
  CHECK(cudaMemcpyAsync(got.data(), d, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] != ref[i]) {
      if (failures < 5) std::fprintf(stderr, "byte %zu = %#x, expected %#x\n", i, got[i], ref[i]);
      ++failures;
    }
  }

  // Setting every byte of ints to 0x01 gives 0x01010101, as a kernel sees it.
  const int n = 20000;
  int *d_ints, *d_count, count = 0;
  CHECK(cudaMalloc(&d_ints, n * sizeof(int)));
  CHECK(cudaMalloc(&d_count, sizeof(int)));
  CHECK(cudaMemsetAsync(d_ints, 0x01, n * sizeof(int), stream));
  CHECK(cudaMemsetAsync(d_count, 0, sizeof(int), stream));
  count_value<<<(n + 255) / 256, 256, 0, stream>>>(d_ints, n, 0x01010101, d_count);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(&count, d_count, sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (count != n) {
    std::fprintf(stderr, "%d of %d ints hold 0x01010101\n", count, n);
    ++failures;
  }

  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d));
  CHECK(cudaFree(d_ints));
  CHECK(cudaFree(d_count));
  if (failures) {
    std::printf("FAIL memset: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS memset: %zu bytes in %zu fills, %d ints\n", bytes, sizeof fills / sizeof fills[0] + 2, n);
  return 0;
}
