// Device functions that are not inlined, with loops and recursion-free calls.
__device__ __noinline__ int collatz_steps(unsigned long long v) {
  int steps = 0;
  while (v != 1 && steps < 1000) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++steps;
  }
  return steps;
}

__device__ __noinline__ unsigned gcd(unsigned a, unsigned b) {
  while (b) {
    unsigned t = a % b;
    a = b;
    b = t;
  }
  return a;
}

__device__ __noinline__ float poly_eval(const float* c, int deg, float x) {
  float r = 0.f;
  for (int i = deg; i >= 0; --i) r = r * x + c[i];
  return r;
}

extern "C" __global__ void device_funcs(const unsigned* in, int* out, const float* coeffs, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = in[i];
  out[2 * i] = collatz_steps(v + 1);
  out[2 * i + 1] = static_cast<int>(gcd(v, 360u));
  outf[i] = poly_eval(coeffs, v % 5, (v % 7) * 0.25f);
}

// Recursion: nvcc keeps a real call stack for this.
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ __noinline__ int sum_digits_rec(int v, int* depth) {
  int local[4] = {v % 10, v / 10, 0, 0};  // a local array in each frame
  ++*depth;
  return local[1] == 0 ? local[0] : local[0] + sum_digits_rec(local[1], depth);
}

extern "C" __global__ void recursion(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int depth = 0;
  out[3 * i] = fib(in[i] % 16);
  out[3 * i + 1] = sum_digits_rec(in[i], &depth);
  out[3 * i + 2] = depth;
}
