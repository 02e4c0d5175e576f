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
