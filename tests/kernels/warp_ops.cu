// Warp shuffles (up, idx, xor with widths), activemask under divergence.
extern "C" __global__ void warp_ops(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int* o = out + 5 * i;
  o[0] = __shfl_up_sync(0xffffffffu, v, 3);
  o[1] = __shfl_sync(0xffffffffu, v, (threadIdx.x * 7) & 31);
  o[2] = __shfl_xor_sync(0xffffffffu, v, 5, 16);
  o[3] = __shfl_down_sync(0xffffffffu, v, 2, 8);
  unsigned mask = 0;
  if (v & 1) mask = __activemask();
  o[4] = static_cast<int>(mask);
}
