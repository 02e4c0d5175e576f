// Half precision with cuda_fp16.h: scalar and half2 arithmetic, conversions.
#include <cuda_fp16.h>

extern "C" __global__ void f16_math(const __half* a, const __half* b, __half* out, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i], y = b[i];
  out[3 * i + 0] = __hadd(x, y);
  out[3 * i + 1] = __hmul(x, y);
  out[3 * i + 2] = __hfma(x, y, __float2half(0.5f));
  __half2 p = __halves2half2(x, y);
  __half2 q = __hmul2(p, p);
  outf[2 * i + 0] = __low2float(q) + __high2float(q);
  outf[2 * i + 1] = __hlt(x, y) ? __half2float(x) : -__half2float(y);
}
