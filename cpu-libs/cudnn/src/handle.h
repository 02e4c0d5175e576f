// The stand-in's cuDNN handle (cudnnContext, opaque in NVIDIA's headers),
// the export marker and the wrapper that keeps exceptions off the C ABI.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <dnnl.hpp>
#include <exception>
#include <memory>
#include <new>

#include "job.h"
#include "rgpu/common/log.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

// One cuDNN handle: the context it was created in, its stream, and the
// oneDNN CPU engine its work computes with. Thread safety: as cuDNN, a
// handle is not reconfigured (SetStream) concurrently with its use.
struct cudnnContext {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  // What its work cost, logged when it is destroyed (docs/pytorch.md's
  // measurements): shared with queued jobs, which may outlive the handle.
  std::shared_ptr<rgpu::cpu_libs::Usage> usage = std::make_shared<rgpu::cpu_libs::Usage>();
};

namespace rgpu::cpudnn {

template <class F>
cudnnStatus_t guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    RGPU_WARN("cpu cudnn: out of host memory function=%s", function);
    return CUDNN_STATUS_ALLOC_FAILED;
  } catch (const dnnl::error& e) {
    RGPU_WARN("cpu cudnn: onednn refused function=%s error=%s", function, e.what());
    return CUDNN_STATUS_NOT_SUPPORTED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cudnn: internal error function=%s error=%s", function, e.what());
    return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace rgpu::cpudnn
