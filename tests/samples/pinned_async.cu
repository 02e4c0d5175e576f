// pinned_async: page-locked host memory (cudaMallocHost, cudaHostAlloc,
// cudaHostRegister) feeding a double-buffered pipeline of cudaMemcpyAsync and
// kernels on two streams; pageable memory with async copies too.
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
      std::printf("FAIL pinned_async: %s\n", cudaGetErrorName(err_));                 \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void square_plus(const int* in, int* out, int n, int add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i] + add;
}

int main() {
  const int chunks = 8, chunk = 8192, n = chunks * chunk;
  int *h_src, *h_dst;
  CHECK(cudaMallocHost(&h_src, n * sizeof(int)));
  CHECK(cudaHostAlloc(&h_dst, n * sizeof(int), cudaHostAllocPortable));
  unsigned int flags = 0;
  CHECK(cudaHostGetFlags(&flags, h_dst));
  int failures = 0;
  if ((flags & cudaHostAllocPortable) == 0) {
    std::fprintf(stderr, "cudaHostGetFlags = %#x, portable flag missing\n", flags);
    ++failures;
  }
  for (int i = 0; i < n; ++i) {
    h_src[i] = (i % 2000) - 1000;
    h_dst[i] = 0;
  }

  // Two device buffers per stream; chunk c runs on stream c % 2.
  cudaStream_t streams[2];
  int *d_in[2], *d_out[2];
  for (int s = 0; s < 2; ++s) {
    CHECK(cudaStreamCreate(&streams[s]));
    CHECK(cudaMalloc(&d_in[s], chunk * sizeof(int)));
    CHECK(cudaMalloc(&d_out[s], chunk * sizeof(int)));
  }
  for (int c = 0; c < chunks; ++c) {
    int s = c % 2;
    CHECK(cudaMemcpyAsync(d_in[s], h_src + c * chunk, chunk * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
    square_plus<<<(chunk + 255) / 256, 256, 0, streams[s]>>>(d_in[s], d_out[s], chunk, c);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_dst + c * chunk, d_out[s], chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
  }
  for (auto& s : streams) CHECK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; ++i) {
    int want = h_src[i] * h_src[i] + i / chunk;
    if (h_dst[i] != want) {
      if (failures < 5) std::fprintf(stderr, "dst[%d] = %d, expected %d\n", i, h_dst[i], want);
      ++failures;
    }
  }

  // Ordinary memory registered in place, then used for async copies.
  std::vector<int> registered(chunk);
  for (int i = 0; i < chunk; ++i) registered[i] = 3 * i;
  CHECK(cudaHostRegister(registered.data(), chunk * sizeof(int), cudaHostRegisterDefault));
  CHECK(cudaMemcpyAsync(d_in[0], registered.data(), chunk * sizeof(int), cudaMemcpyHostToDevice, streams[0]));
  square_plus<<<(chunk + 255) / 256, 256, 0, streams[0]>>>(d_in[0], d_out[0], chunk, 5);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(registered.data(), d_out[0], chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  CHECK(cudaHostUnregister(registered.data()));
  for (int i = 0; i < chunk; ++i) {
    if (registered[i] != 9 * i * i + 5) {
      if (failures < 5) std::fprintf(stderr, "registered[%d] = %d, expected %d\n", i, registered[i], 9 * i * i + 5);
      ++failures;
    }
  }

  // Pageable memory is legal with cudaMemcpyAsync; the result is there after the sync.
  std::vector<int> pageable(chunk, -7);
  CHECK(cudaMemcpyAsync(pageable.data(), d_in[1], chunk * sizeof(int), cudaMemcpyDeviceToHost, streams[1]));
  CHECK(cudaStreamSynchronize(streams[1]));
  for (int i = 0; i < chunk; ++i) {
    // d_in[1] last held chunk 7 (odd chunks ran on stream 1).
    if (pageable[i] != h_src[7 * chunk + i]) {
      if (failures < 5) std::fprintf(stderr, "pageable[%d] = %d, expected %d\n", i, pageable[i], h_src[7 * chunk + i]);
      ++failures;
    }
  }

  for (int s = 0; s < 2; ++s) {
    CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFree(d_in[s]));
    CHECK(cudaFree(d_out[s]));
  }
  CHECK(cudaFreeHost(h_src));
  CHECK(cudaFreeHost(h_dst));
  if (failures) {
    std::printf("FAIL pinned_async: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS pinned_async: %d chunks of %d through 2 streams\n", chunks, chunk);
  return 0;
}
