// templates: kernels templated on element type, block size and a functor,
// instantiated for int, float and double.
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
      std::printf("FAIL templates: %s\n", cudaGetErrorName(err_));                    \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Sum {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const { return a + b; }
  template <typename T>
  __host__ __device__ static T identity() { return T(0); }
};

struct Max {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const { return a > b ? a : b; }
  template <typename T>
  __host__ __device__ static T identity() { return T(-1000000); }
};

template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// One block reduces everything; BLOCK is a compile-time size for the shared array.
template <typename T, int BLOCK, typename Op>
__global__ void block_reduce(const T* in, T* out, int n, Op op) {
  __shared__ T s[BLOCK];
  T acc = Op::template identity<T>();
  for (int i = threadIdx.x; i < n; i += BLOCK) acc = op(acc, in[i]);
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] = op(s[threadIdx.x], s[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = s[0];
}

template <typename T>
static int test_axpy(T a, int n, const char* name) {
  std::vector<T> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = T(i % 100);
    y[i] = T(i % 17);
  }
  T *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(T)));
  CHECK(cudaMalloc(&dy, n * sizeof(T)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  axpy<T><<<(n + 127) / 128, 128>>>(a, dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (out[i] != a * x[i] + y[i]) {
      if (bad < 3) std::fprintf(stderr, "axpy<%s>: y[%d] = %g, expected %g\n", name, i, double(out[i]),
                                double(a * x[i] + y[i]));
      ++bad;
    }
  }
  return bad;
}

template <typename T, int BLOCK, typename Op>
static int test_reduce(int n, Op op, const char* name) {
  std::vector<T> in(n);
  T expected = Op::template identity<T>();
  for (int i = 0; i < n; ++i) {
    in[i] = T((i * 37) % 1001) - T(500);
    expected = op(expected, in[i]);
  }
  T *d_in, *d_out, got = T(0);
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, sizeof(T)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  block_reduce<T, BLOCK, Op><<<1, BLOCK>>>(d_in, d_out, n, op);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&got, d_out, sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  if (got != expected) {
    std::fprintf(stderr, "reduce<%s, %d>: got %g, expected %g\n", name, BLOCK, double(got), double(expected));
    return 1;
  }
  return 0;
}

int main() {
  int bad = 0;
  bad += test_axpy<int>(3, 10000, "int");
  bad += test_axpy<float>(2.5f, 10000, "float");
  bad += test_axpy<double>(-1.25, 10000, "double");
  // Integer-valued data keeps float and double sums exact whatever the order.
  bad += test_reduce<int, 128>(20000, Sum{}, "int sum");
  bad += test_reduce<float, 256>(20000, Sum{}, "float sum");
  bad += test_reduce<double, 64>(20000, Sum{}, "double sum");
  bad += test_reduce<int, 256>(20000, Max{}, "int max");
  bad += test_reduce<double, 128>(20000, Max{}, "double max");
  if (bad) {
    std::printf("FAIL templates: %d problems\n", bad);
    return 1;
  }
  std::printf("PASS templates: axpy and reductions over int, float, double\n");
  return 0;
}
