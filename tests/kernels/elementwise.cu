// Element-wise maps: float vector add, saxpy, and integer arithmetic with
// division and remainder by run-time values.
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(float alpha, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = alpha * x[i] + y[i];
}

extern "C" __global__ void int_ops(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = static_cast<unsigned>(x), uy = static_cast<unsigned>(y);
  int* o = out + 8 * i;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = static_cast<int>(ux / uy);
  o[3] = static_cast<int>(ux % uy);
  o[4] = min(x, y) * 3 - max(x, y);
  o[5] = abs(x) ^ (y << 3);
  o[6] = (x >> 2) + static_cast<int>(ux >> 5);
  o[7] = static_cast<int>(static_cast<long long>(x) * y >> 7);
}
