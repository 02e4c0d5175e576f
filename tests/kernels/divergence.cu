// Divergent control flow: nested branches, loops with per-thread trip
// counts, early exit and a barrier after reconvergence.
extern "C" __global__ void divergence(const int* in, int* out, int n) {
  __shared__ int s[128];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  int v = i < n ? in[i] : 0;
  int acc = 0;
  if (v % 3 == 0) {
    for (int k = 0; k < (v & 15); ++k) acc += k * v;
  } else if (v % 3 == 1) {
    int k = v;
    while (k > 1) {
      if (k & 1) acc += 3;
      else acc -= 1;
      k >>= 1;
    }
  } else {
    acc = -v;
  }
  s[t] = acc;
  __syncthreads();
  int neighbour = s[(t + 1) % blockDim.x];
  if (i >= n) return;
  if (acc > 50) {
    out[i] = acc + neighbour;
    return;
  }
  out[i] = acc - neighbour;
}
