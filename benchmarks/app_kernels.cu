// The empty kernel of rgpu-bench's launch-rate measurement, compiled to PTX at
// build time (nvcc -ptx) and loaded with cuModuleLoadData. The application
// kernels come from the samples themselves (tests/samples), compiled the same
// way.
extern "C" __global__ void empty_kernel() {}
