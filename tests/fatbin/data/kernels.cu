// Kernels whose parameter layouts the fatbin tests check: scalars of every
// size, pointers, a struct passed by value, an over-aligned struct, launch
// bounds, static shared memory, a template and a kernel without parameters.
struct Mixed {
  double a;
  int b;
  char c[12];
};

struct alignas(16) Wide {
  float v[5];
};

extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void mixed(char c, Mixed s, short h, double* out, long long q) {
  __shared__ float buf[256];
  buf[threadIdx.x] = c + h;
  __syncthreads();
  out[threadIdx.x] = s.a + s.b + s.c[3] + buf[threadIdx.x ^ 1] + q;
}

__global__ void wide(unsigned char tag, Wide w, int* out) {
  out[threadIdx.x] = tag + static_cast<int>(w.v[threadIdx.x % 5]);
}

template <int N>
__global__ void __launch_bounds__(128) filled(int* p) {
  p[threadIdx.x] = N;
}
template __global__ void filled<3>(int*);

extern "C" __global__ void noargs() {}
