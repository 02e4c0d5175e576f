// unified_addressing: cudaPointerGetAttributes tells device, pinned and
// ordinary host pointers apart, and cudaMemcpyDefault copies between any two
// of them, the direction inferred from the addresses.
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
      std::printf("FAIL unified_addressing: %s\n", cudaGetErrorName(err_));           \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

static int failures = 0;

static void expect_type(const void* p, cudaMemoryType want, const char* what) {
  cudaPointerAttributes attr;
  CHECK(cudaPointerGetAttributes(&attr, p));
  if (attr.type != want) {
    std::fprintf(stderr, "%s: type %d, expected %d\n", what, int(attr.type), int(want));
    ++failures;
    return;
  }
  if (want == cudaMemoryTypeDevice && (attr.devicePointer != p || attr.device != 0)) {
    std::fprintf(stderr, "%s: devicePointer %p device %d\n", what, attr.devicePointer, attr.device);
    ++failures;
  }
  if (want == cudaMemoryTypeHost && attr.hostPointer != p) {
    std::fprintf(stderr, "%s: hostPointer %p, expected %p\n", what, attr.hostPointer, p);
    ++failures;
  }
}

__global__ void negate(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = -p[i];
}

int main() {
  int unified = 0;
  CHECK(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, 0));
  if (!unified) {
    std::printf("FAIL unified_addressing: device 0 reports no unified addressing\n");
    return 1;
  }
  const int n = 30000;
  const size_t bytes = n * sizeof(int);
  int *d_a, *d_b, *pinned;
  CHECK(cudaMalloc(&d_a, bytes));
  CHECK(cudaMalloc(&d_b, bytes));
  CHECK(cudaMallocHost(&pinned, bytes));
  std::vector<int> pageable(n), result(n, 0);
  for (int i = 0; i < n; ++i) pageable[i] = i * 5 - 7;

  expect_type(d_a, cudaMemoryTypeDevice, "device allocation");
  expect_type(d_a + 1234, cudaMemoryTypeDevice, "inside a device allocation");
  expect_type(pinned, cudaMemoryTypeHost, "cudaMallocHost memory");
  expect_type(pageable.data(), cudaMemoryTypeUnregistered, "pageable memory");

  // pageable -> device -> device -> pinned -> pageable, every hop cudaMemcpyDefault.
  CHECK(cudaMemcpy(d_a, pageable.data(), bytes, cudaMemcpyDefault));
  negate<<<(n + 255) / 256, 256>>>(d_a, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d_b, d_a, bytes, cudaMemcpyDefault));
  CHECK(cudaMemcpy(pinned, d_b, bytes, cudaMemcpyDefault));
  CHECK(cudaMemcpy(result.data(), pinned, bytes, cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) {
    if (result[i] != -pageable[i]) {
      if (failures < 5) std::fprintf(stderr, "result[%d] = %d, expected %d\n", i, result[i], -pageable[i]);
      ++failures;
    }
  }

  // An async cudaMemcpyDefault from pinned memory into the middle of a device buffer.
  for (int i = 0; i < 100; ++i) pinned[i] = 424242 + i;
  CHECK(cudaMemcpyAsync(d_b + 500, pinned, 100 * sizeof(int), cudaMemcpyDefault, 0));
  CHECK(cudaMemcpy(result.data(), d_b, bytes, cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) {
    int want = (i >= 500 && i < 600) ? 424242 + (i - 500) : -pageable[i];
    if (result[i] != want) {
      if (failures < 5) std::fprintf(stderr, "after async: result[%d] = %d, expected %d\n", i, result[i], want);
      ++failures;
    }
  }

  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFreeHost(pinned));
  if (failures) {
    std::printf("FAIL unified_addressing: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS unified_addressing: 4 pointer kinds, 5 cudaMemcpyDefault copies\n");
  return 0;
}
