// Kernels the CPU device tests load (as a fatbin and as PTX) and launch.
extern "C" {

__device__ int g_counter = 5;
__constant__ float c_scale[4] = {1.0f, 2.0f, 3.0f, 4.0f};

__global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Scales by a constant-memory factor and bumps a device global.
__global__ void scale_and_count(float* x, int n, int which) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= c_scale[which];
  if (i == 0) atomicAdd(&g_counter, 1);
}

// One sum per block, through static shared memory.
__global__ void block_sum(const int* in, int* out) {
  __shared__ int buf[256];
  int t = threadIdx.x;
  buf[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}

// Reverses each block's slice through dynamic shared memory.
__global__ void reverse_dynamic(int* data) {
  extern __shared__ int tmp[];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  tmp[t] = data[base + t];
  __syncthreads();
  data[base + t] = tmp[blockDim.x - 1 - t];
}

// Writes `offset` elements past `p`: out of bounds when offset is large.
__global__ void poke(int* p, long long offset) { p[offset] = 42; }

// Copies one int: a load from `src` and a store to `dst`.
__global__ void peek(const int* src, int* dst) { dst[0] = src[0]; }

// An atomic add on `p`.
__global__ void bump(int* p) { atomicAdd(p, 1); }

// Spins for `iterations` rounds (for stream ordering tests).
__global__ void spin(int* out, int iterations) {
  int acc = 0;
  for (int i = 0; i < iterations; ++i) acc += i ^ threadIdx.x;
  if (threadIdx.x == 0) out[0] = acc;
}

}  // extern "C"
