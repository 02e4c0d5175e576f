// More math library functions (float and double), 64-bit integer division,
// bfloat16 and half math functions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void math_more(const float* in, float* out, double* outd, long long* outl, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float* o = out + 12 * i;
  o[0] = erff(x);
  o[1] = lgammaf(x + 3.0f);
  o[2] = cbrtf(x);
  o[3] = fmodf(x * 7.0f, 1.3f);
  o[4] = log10f(x + 2.0f);
  o[5] = exp2f(x);
  float s, c;
  sincosf(x * 3.0f, &s, &c);
  o[6] = s * c;
  o[7] = __fdividef(x, 3.0f);
  o[8] = __bfloat162float(__hmul(__float2bfloat16(x), __float2bfloat16(1.5f)));
  o[9] = __half2float(hsqrt(__float2half(x + 2.0f)));
  o[10] = __half2float(hexp(__float2half(x)));
  o[11] = atanf(x) + asinf(x * 0.5f) + acosf(x * 0.25f);
  double d = x;
  outd[3 * i + 0] = pow(d + 2.0, 2.3);
  outd[3 * i + 1] = tanh(d) + fmod(d * 11.0, 1.7);
  outd[3 * i + 2] = cbrt(d) + log1p(d + 1.0) + expm1(d);
  long long a = static_cast<long long>(x * 1e15), b = static_cast<long long>(i) * 7919 + 3;
  outl[2 * i + 0] = a / b + a % b;
  outl[2 * i + 1] = static_cast<long long>(__umul64hi(static_cast<unsigned long long>(a), 0x9e3779b97f4a7c15ull));
}
