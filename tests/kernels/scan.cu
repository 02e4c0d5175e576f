// Scans of one block of up to 1024 elements: inclusive (Hillis-Steele, double
// buffered) and exclusive (Blelloch work-efficient, in place).
extern "C" __global__ void scan_inclusive(const int* in, int* out, int n) {
  __shared__ int buf[2][1024];
  int t = threadIdx.x;
  int pin = 0;
  buf[0][t] = t < n ? in[t] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int pout = 1 - pin;
    int v = buf[pin][t];
    if (t >= off) v += buf[pin][t - off];
    buf[pout][t] = v;
    pin = pout;
    __syncthreads();
  }
  if (t < n) out[t] = buf[pin][t];
}

extern "C" __global__ void scan_exclusive(const int* in, int* out, int n) {
  __shared__ int s[1024];
  int t = threadIdx.x;
  int size = blockDim.x;
  s[t] = t < n ? in[t] : 0;
  int off = 1;
  for (int d = size >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      int ai = off * (2 * t + 1) - 1, bi = off * (2 * t + 2) - 1;
      s[bi] += s[ai];
    }
    off <<= 1;
  }
  if (t == 0) s[size - 1] = 0;
  for (int d = 1; d < size; d <<= 1) {
    off >>= 1;
    __syncthreads();
    if (t < d) {
      int ai = off * (2 * t + 1) - 1, bi = off * (2 * t + 2) - 1;
      int tmp = s[ai];
      s[ai] = s[bi];
      s[bi] += tmp;
    }
  }
  __syncthreads();
  if (t < n) out[t] = s[t];
}
