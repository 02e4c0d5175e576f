// Conversions between integer and floating point widths with rounding.
extern "C" __global__ void conversions(const float* in, int* oi, float* of, long long* ol, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  oi[6 * i + 0] = static_cast<int>(x);
  oi[6 * i + 1] = __float2int_rn(x);
  oi[6 * i + 2] = static_cast<int>(floorf(x));
  oi[6 * i + 3] = static_cast<int>(ceilf(x));
  oi[6 * i + 4] = static_cast<unsigned char>(static_cast<int>(x * 10.f));
  oi[6 * i + 5] = static_cast<short>(static_cast<int>(x * 1000.f));
  of[3 * i + 0] = rintf(x);
  of[3 * i + 1] = truncf(x) + __saturatef(x);
  of[3 * i + 2] = static_cast<float>(static_cast<double>(x) * 1.0e10);
  ol[i] = static_cast<long long>(static_cast<double>(x) * 1.0e12);
}
