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
