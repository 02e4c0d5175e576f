// Kernel launches: argument checks, the parameter buffer, and the stream
// operation that runs the interpreter over the device's worker pool.
#pragma once

#include <memory>

#include "api_common.h"

namespace rgpu::cpudev {

// The geometry of one launch. A value type.
struct LaunchShape {
  ptx::Dim3 grid;
  ptx::Dim3 block;
  unsigned shared_bytes = 0;
};

// Builds the parameter buffer of kernel `k` from cuLaunchKernel's
// kernelParams or extra (exactly one must describe the parameters when the
// kernel has any). INVALID_VALUE on malformed input.
CUresult build_params(const ptx::KernelInfo& k, void** kernel_params, void** extra, std::vector<uint8_t>* out);

// Checks the shape against the device limits and the function's attributes.
CUresult check_shape(const ptx::KernelInfo& k, Function& f, const LaunchShape& shape);

// Enqueues the launch on `stream` of `ctx`.
CUresult enqueue_launch(Driver* d, const std::shared_ptr<Context>& ctx, const std::shared_ptr<Stream>& stream,
                        std::shared_ptr<Module> module, int kernel, const LaunchShape& shape,
                        std::vector<uint8_t> params);

}  // namespace rgpu::cpudev
