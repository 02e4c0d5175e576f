// Histograms of bytes into 256 bins: global atomics, and per-block shared
// atomics merged into global memory.
extern "C" __global__ void histogram_global(const unsigned char* in, unsigned* bins, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&bins[in[i]], 1u);
}

extern "C" __global__ void histogram_shared(const unsigned char* in, unsigned* bins, int n) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}
