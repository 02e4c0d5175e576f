// 1-D stencil of radius 3 with a shared-memory halo.
#define RADIUS 3
#define BLOCK 128

extern "C" __global__ void stencil_1d(const float* in, float* out, int n) {
  __shared__ float temp[BLOCK + 2 * RADIUS];
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + RADIUS;
  temp[l] = g < n ? in[g] : 0.f;
  if (threadIdx.x < RADIUS) {
    temp[l - RADIUS] = (g - RADIUS >= 0 && g - RADIUS < n) ? in[g - RADIUS] : 0.f;
    temp[l + BLOCK] = (g + BLOCK < n) ? in[g + BLOCK] : 0.f;
  }
  __syncthreads();
  if (g < n) {
    float r = 0.f;
    for (int o = -RADIUS; o <= RADIUS; ++o) r += temp[l + o] * (1.0f + 0.25f * o);
    out[g] = r;
  }
}
