// constant_memory: polynomial coefficients in __constant__ memory set with
// cudaMemcpyToSymbol (whole and at an offset) and read back with
// cudaMemcpyFromSymbol; a __device__ counter reached via cudaGetSymbolAddress.
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
      std::printf("FAIL constant_memory: %s\n", cudaGetErrorName(err_));              \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int DEGREE = 8;
__constant__ int coeffs[DEGREE];
__device__ int counter;
__device__ int initialized[4] = {11, 22, 33, 44};

// out[i] = sum_k coeffs[k] * x^k, evaluated by Horner's rule with x = i % 7 - 3.
__global__ void polynomial(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int x = i % 7 - 3, v = 0;
    for (int k = DEGREE - 1; k >= 0; --k) v = v * x + coeffs[k];
    out[i] = v;
    atomicAdd(&counter, 1);
  }
}

static int host_polynomial(const int* c, int i) {
  int x = i % 7 - 3, v = 0;
  for (int k = DEGREE - 1; k >= 0; --k) v = v * x + c[k];
  return v;
}

static int check(const std::vector<int>& out, const int* c, const char* what) {
  int bad = 0;
  for (int i = 0; i < int(out.size()); ++i) {
    if (out[i] != host_polynomial(c, i)) {
      if (bad < 5) std::fprintf(stderr, "%s: out[%d] = %d, expected %d\n", what, i, out[i], host_polynomial(c, i));
      ++bad;
    }
  }
  return bad;
}

int main() {
  const int n = 20000;
  int h_coeffs[DEGREE] = {1, -2, 3, -1, 2, 0, 1, -1};
  CHECK(cudaMemcpyToSymbol(coeffs, h_coeffs, sizeof h_coeffs));

  int failures = 0;
  int readback[DEGREE] = {};
  CHECK(cudaMemcpyFromSymbol(readback, coeffs, sizeof readback));
  for (int k = 0; k < DEGREE; ++k) failures += readback[k] != h_coeffs[k];

  int* d_counter = nullptr;
  CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&d_counter), counter));
  size_t counter_size = 0;
  CHECK(cudaGetSymbolSize(&counter_size, counter));
  if (d_counter == nullptr || counter_size != sizeof(int)) {
    std::fprintf(stderr, "counter at %p size %zu\n", static_cast<void*>(d_counter), counter_size);
    ++failures;
  }
  CHECK(cudaMemset(d_counter, 0, sizeof(int)));

  int* d_out;
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  std::vector<int> out(n);
  polynomial<<<(n + 255) / 256, 256>>>(d_out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  failures += check(out, h_coeffs, "full");

  // Replace coefficients 4..7 only (offset in bytes), then run again.
  int upper[4] = {-3, 1, 0, 2};
  CHECK(cudaMemcpyToSymbol(coeffs, upper, sizeof upper, 4 * sizeof(int), cudaMemcpyHostToDevice));
  for (int k = 0; k < 4; ++k) h_coeffs[4 + k] = upper[k];
  polynomial<<<(n + 255) / 256, 256>>>(d_out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  failures += check(out, h_coeffs, "offset");
  int lower_half[2] = {};
  CHECK(cudaMemcpyFromSymbol(lower_half, coeffs, sizeof lower_half, 5 * sizeof(int)));
  failures += lower_half[0] != upper[1] || lower_half[1] != upper[2];

  // Both launches counted every thread, through the symbol and through its address.
  int count_via_symbol = 0, count_via_address = 0;
  CHECK(cudaMemcpyFromSymbol(&count_via_symbol, counter, sizeof(int)));
  CHECK(cudaMemcpy(&count_via_address, d_counter, sizeof(int), cudaMemcpyDeviceToHost));
  if (count_via_symbol != 2 * n || count_via_address != 2 * n) {
    std::fprintf(stderr, "counter = %d / %d, expected %d\n", count_via_symbol, count_via_address, 2 * n);
    ++failures;
  }

  // A __device__ variable keeps its initializer until written.
  int init[4] = {};
  CHECK(cudaMemcpyFromSymbol(init, initialized, sizeof init));
  if (init[0] != 11 || init[1] != 22 || init[2] != 33 || init[3] != 44) {
    std::fprintf(stderr, "initialized = {%d, %d, %d, %d}\n", init[0], init[1], init[2], init[3]);
    ++failures;
  }

  // Copying past the end of a symbol is refused.
  cudaError_t e = cudaMemcpyToSymbol(coeffs, h_coeffs, sizeof h_coeffs, sizeof(int));
  if (e != cudaErrorInvalidValue) {
    std::fprintf(stderr, "copy past the symbol's end returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  (void)cudaGetLastError();

  CHECK(cudaFree(d_out));
  if (failures) {
    std::printf("FAIL constant_memory: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS constant_memory: %d evaluations twice, counter %d\n", n, 2 * n);
  return 0;
}
