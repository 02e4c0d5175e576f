// The empty kernel of rgpu-bench's launch-rate measurement and the busy
// kernel of its load, compiled to PTX at
// build time (nvcc -ptx) and loaded with cuModuleLoadData. The application
// kernels come from the samples themselves (tests/samples), compiled the same
// way.
extern "C" __global__ void empty_kernel() {}

// Work that keeps a core busy for a while (rgpu-bench busy): a dependent
// chain of integer steps the compiler cannot fold.
extern "C" __global__ void spin_kernel(unsigned long long steps, unsigned int* out) {
  unsigned int x = threadIdx.x + 1;
  for (unsigned long long i = 0; i < steps; ++i) x = x * 1664525u + 1013904223u;
  if (x == 0) out[0] = x;  // almost never: keeps the loop
}
