// Entry points: kernel launches (not supported until modules are loaded by
// the PTX interpreter).
#include "api_common.h"

using namespace rgpu::cpudev;

extern "C" {

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  Driver* d;
  std::shared_ptr<Context> ctx;
  RGPU_CU_TRY(enter(&d, &ctx));
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"

extern "C" {

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> current;
    RGPU_CU_TRY(enter(&d, &current));
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(resolve_stream(d, current, hStream, &ctx, &s));
    uint64_t seq = ctx->enqueue(s, {}, [fn, userData] {
      fn(userData);
      return CUDA_SUCCESS;
    });
    return seq ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  });
}

}  // extern "C"
