// Block-wide barrier reductions (__syncthreads_count/and/or) and integer dot
// products (__dp4a, __dp2a) and __fns.
extern "C" __global__ void block_reduce(const int* in, int* out, int* dots) {
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  int v = in[i];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -90);
  int any = __syncthreads_or(v > 95);
  if (t == 0) {
    out[3 * blockIdx.x + 0] = count;
    out[3 * blockIdx.x + 1] = all;
    out[3 * blockIdx.x + 2] = any;
  }
  unsigned u = static_cast<unsigned>(v) * 2654435761u;
  dots[4 * i + 0] = __dp4a(static_cast<int>(u), v, 7);
  dots[4 * i + 1] = static_cast<int>(__dp4a(u, static_cast<unsigned>(v), 3u));
  dots[4 * i + 2] = __dp2a_lo(static_cast<int>(u), v, -5);
  dots[4 * i + 3] = static_cast<int>(__fns(u, t & 31, (v % 5) - 2));
}
