// What cuda.h names a few APIs when a program is built for the per-thread
// default stream (this file is compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM).
#include <cuda.h>

#include "proc_address_names.h"

#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "compile with CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

namespace rgpu::shim::test {

std::vector<ApiName> per_thread_names() {
  return {RGPU_API_NAME(cuMemAlloc), RGPU_API_NAME(cuMemcpyHtoD), RGPU_API_NAME(cuMemcpyHtoDAsync),
          RGPU_API_NAME(cuMemcpy), RGPU_API_NAME(cuMemcpyAsync), RGPU_API_NAME(cuMemsetD32),
          RGPU_API_NAME(cuMemsetD8Async), RGPU_API_NAME(cuStreamSynchronize),
          RGPU_API_NAME(cuStreamQuery), RGPU_API_NAME(cuLaunchKernel), RGPU_API_NAME(cuEventRecord),
          RGPU_API_NAME(cuStreamBeginCapture), RGPU_API_NAME(cuStreamGetCaptureInfo),
          RGPU_API_NAME(cuMemPrefetchAsync), RGPU_API_NAME(cuGraphLaunch),
          RGPU_API_NAME(cuMemBatchDecompressAsync), RGPU_API_NAME(cuCtxCreate)};
}

}  // namespace rgpu::shim::test
