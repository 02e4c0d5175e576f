// Double precision: arithmetic, division, sqrt, exp, log, sin, fma.
extern "C" __global__ void f64_math(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  double* o = out + 6 * i;
  o[0] = x * x - 3.0 * x + 1.5;
  o[1] = 1.0 / (x + 4.0);
  o[2] = sqrt(x + 5.0);
  o[3] = exp(x * 0.5);
  o[4] = log(x + 6.0) + sin(x);
  o[5] = fma(x, 2.5, -x / 7.0);
}
