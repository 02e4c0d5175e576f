// Atomic operations on global memory: every kind nvcc emits for int, unsigned, float and double.
extern "C" __global__ void atomics(const int* in, int* iv, unsigned* uv, float* fv, double* dv, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = in[i];
  atomicAdd(&iv[0], x);
  atomicMin(&iv[1], x);
  atomicMax(&iv[2], x);
  atomicAnd(&iv[3], x | 0x0f0f0000);
  atomicOr(&iv[4], x & 0xff);
  atomicXor(&iv[5], x);
  atomicInc(&uv[0], 16u);
  atomicDec(&uv[1], 1000u);
  atomicAdd(&fv[0], x * 0.5f);
  atomicAdd(&dv[0], x * 0.25);
  int old = atomicCAS(&iv[6], 0, i + 1);
  if (old == 0) atomicExch(&iv[7], i + 1);
}
