// Warp reductions (redux.sync, sm_80 and later) and match.any.sync.
extern "C" __global__ void warp_sm80(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int* o = out + 4 * i;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  o[0] = __reduce_add_sync(0xffffffffu, v);
  o[1] = __reduce_min_sync(0xffffffffu, v);
  o[2] = __reduce_max_sync(0xffffffffu, v);
#else
  int s = v, mn = v, mx = v;
  for (int off = 16; off > 0; off >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, off);
    mn = min(mn, __shfl_xor_sync(0xffffffffu, mn, off));
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  }
  o[0] = s;
  o[1] = mn;
  o[2] = mx;
#endif
  o[3] = static_cast<int>(__match_any_sync(0xffffffffu, v & 7));
}
