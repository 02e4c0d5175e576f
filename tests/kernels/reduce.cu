// Reductions: tree reduction in shared memory (one partial sum per block) and
// warp-shuffle reduction finished with a global atomic.
extern "C" __global__ void reduce_shared(const float* in, float* partial, int n) {
  __shared__ float s[256];
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + t;
  float v = 0.f;
  if (i < n) v += in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  s[t] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_shfl(const int* in, int* total, int n) {
  int sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += in[i];
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ int warp_sums[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    int nw = (blockDim.x + 31) >> 5;
    sum = lane < nw ? warp_sums[lane] : 0;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) atomicAdd(total, sum);
  }
}
