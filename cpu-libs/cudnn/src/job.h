// The cuDNN stand-in's unit of stream-ordered work: the common job
// (rgpu/cpu_libs/job.h) with contiguous spans for operands.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>

#include "rgpu/cpu_libs/job.h"

namespace rgpu::cpudnn {

using cpu_libs::ContextGuard;
using cpu_libs::Usage;

struct Span {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
  bool read = false;   // copied in before compute
  bool write = false;  // copied out after compute
};

class Job : public cpu_libs::JobOf<Job> {
 public:
  Job() : JobOf("cudnn") {}
  // Adds an operand; returns its index for host().
  size_t add(const Span& s) { return cpu_libs::Job::add(cpu_libs::Region::span(s.ptr, s.bytes, s.read, s.write)); }
};

// Checks every operand against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// CUDNN_STATUS_SUCCESS once queued; CUDNN_STATUS_BAD_PARAM when an operand
// is outside one live allocation; CUDNN_STATUS_EXECUTION_FAILED when the
// driver refuses an enqueue.
inline cudnnStatus_t submit(std::unique_ptr<Job> job, CUstream stream) {
  switch (cpu_libs::submit(std::move(job), stream)) {
    case cpu_libs::Queued::kYes: return CUDNN_STATUS_SUCCESS;
    case cpu_libs::Queued::kOutside:
    case cpu_libs::Queued::kTooLarge: return CUDNN_STATUS_BAD_PARAM;
    case cpu_libs::Queued::kEnqueueFailed: break;
  }
  return CUDNN_STATUS_EXECUTION_FAILED;
}

}  // namespace rgpu::cpudnn
