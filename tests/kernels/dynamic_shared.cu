// Dynamic shared memory: each block reverses its slice of the array.
extern "C" __global__ void reverse_dynamic(int* data, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  if (base + t < n) s[t] = data[base + t];
  __syncthreads();
  int src = blockDim.x - 1 - t;
  if (base + t < n && base + src < n) data[base + t] = s[src];
}
