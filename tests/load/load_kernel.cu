// The load test's one kernel: y[i] = x[i] * a + i over 32-bit words, with
// wrap-around, so the host can compute every expected byte exactly. x and y
// may be the same buffer (each element reads only its own word).
extern "C" __global__ void load_axpi(const unsigned* x, unsigned* y, unsigned a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * a + i;
}
