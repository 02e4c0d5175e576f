// A per-thread array indexed at run time, which nvcc keeps in local memory.
extern "C" __global__ void local_array(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a[24];
  for (int k = 0; k < 24; ++k) a[k] = in[i] * k + (k ^ i);
  int idx = in[i] & 15;
  int sum = 0;
  for (int k = idx; k < 24; k += 3) sum += a[k];
  a[idx] = sum;
  out[i] = a[(idx * 5) % 24] + a[idx];
}
