// Parameters passed by value: a struct with mixed members and an array
// wrapped in a struct.
struct Params {
  float scale;
  int offset;
  double bias;
  char tag;
  long long big;
};
struct Coeffs {
  float c[8];
};

extern "C" __global__ void struct_param(Params p, Coeffs k, const float* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float poly = 0.f;
  for (int j = 7; j >= 0; --j) poly = poly * in[i] + k.c[j];
  out[i] = poly * p.scale + p.offset + p.bias + p.tag + static_cast<double>(p.big % 1000);
}

// A __grid_constant__ parameter whose address is taken (generic pointer into
// the parameter space) and passed to a device function.
struct Table {
  float a[16];
  int n;
};

__device__ __noinline__ float table_sum(const Table* t) {
  float s = 0.f;
  for (int i = 0; i < t->n; ++i) s += t->a[i];
  return s;
}

extern "C" __global__ void grid_constant(const __grid_constant__ Table t, float* out) {
  out[threadIdx.x] = table_sum(&t) + t.a[threadIdx.x & 15];
}
