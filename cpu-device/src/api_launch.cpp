// Entry points: kernel launches and host functions.
#include "api_common.h"
#include "errors.h"
#include "launch.h"
#include "rgpu/common/log.h"

using namespace rgpu::cpudev;

extern "C" {

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> current;
    RGPU_CU_TRY(enter(&d, &current));
    auto fn = d->function(reinterpret_cast<uint64_t>(f));
    auto module = fn ? fn->module() : nullptr;
    if (!module) return CUDA_ERROR_INVALID_HANDLE;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> stream;
    RGPU_CU_TRY(resolve_stream(d, current, hStream, &ctx, &stream));
    if (ctx->handle() != module->context()) return CUDA_ERROR_INVALID_HANDLE;
    const rgpu::ptx::KernelInfo& k = module->program().kernels()[static_cast<size_t>(fn->index())];
    LaunchShape shape{{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes};
    RGPU_CU_TRY(check_shape(k, *fn, shape));
    std::vector<uint8_t> params;
    RGPU_CU_TRY(build_params(k, kernelParams, extra, &params));
    if (std::string why = fn->launch_refusal(*module); !why.empty()) {
      RGPU_WARN("cpudev kernel not supported kernel=%s reason=\"%s\"", k.name.c_str(), why.c_str());
      note_reason(CUDA_ERROR_NOT_SUPPORTED, std::move(why));
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    return enqueue_launch(d, ctx, stream, std::move(module), fn->index(), shape, std::move(params));
  });
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  if (config->numAttrs && !config->attrs) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    switch (config->attrs[i].id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        break;  // hints without meaning on a CPU
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        // Lets the kernel start before the previous one of its stream ends;
        // a stream here runs one operation at a time, which is one of the
        // orders it allows (griddepcontrol is a no-op: the previous grid has
        // finished and its writes are seen).
        break;
      default:
        return CUDA_ERROR_NOT_SUPPORTED;  // clusters, cooperative launches, programmatic events
    }
  }
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                        config->blockDimZ, config->sharedMemBytes, config->hStream, kernelParams, extra);
}

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
    }, OpKind::kHost, CU_GRAPH_NODE_TYPE_HOST);
    return seq ? CUDA_SUCCESS : capture_refusal();
  });
}

}  // extern "C"
