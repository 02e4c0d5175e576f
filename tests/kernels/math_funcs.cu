// Single precision math library functions.
extern "C" __global__ void math_funcs(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float* o = out + 10 * i;
  o[0] = expf(x);
  o[1] = logf(x + 2.0f);
  o[2] = sinf(x);
  o[3] = cosf(x);
  o[4] = sqrtf(x + 2.0f);
  o[5] = rsqrtf(x + 2.0f);
  o[6] = powf(x + 2.0f, 1.7f);
  o[7] = tanhf(x);
  o[8] = atan2f(x, 0.75f);
  o[9] = __expf(x) + __sinf(x) + __logf(x + 3.0f);
}
