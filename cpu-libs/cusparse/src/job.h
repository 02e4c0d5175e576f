// The cuSPARSE stand-in's unit of stream-ordered work: the common job
// (rgpu/cpu_libs/job.h) with contiguous spans for operands. A written span
// is always read first, so compute that refuses its input leaves it
// unchanged.
#pragma once

#include <cuda.h>
#include <cusparse.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "rgpu/cpu_libs/job.h"

namespace rgpu::cpusparse {

using cpu_libs::ContextGuard;

struct Span {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
  bool write = false;  // copied out after compute (and in before it)
};

class Job : public cpu_libs::Job {
 public:
  Job() : cpu_libs::Job("cusparse") {}
  size_t add(const Span& s) { return cpu_libs::Job::add(cpu_libs::Region::span(s.ptr, s.bytes, true, s.write)); }
  uint64_t bytes(size_t i) const { return region(i).width; }

  // Runs on a host function of the stream after every span has been copied
  // in. Must not call the driver API. Returns false when the input is bad
  // (an index out of range): the handle's `failed` is then set.
  std::function<bool(Job&)> compute;
  std::shared_ptr<std::atomic<bool>> failed;

 protected:
  void run() override;
};

// Checks every span against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// CUSPARSE_STATUS_SUCCESS once queued; CUSPARSE_STATUS_INVALID_VALUE when a
// span is outside one live allocation (an array shorter than its
// descriptor says); CUSPARSE_STATUS_EXECUTION_FAILED when the driver refuses
// an enqueue.
cusparseStatus_t submit(std::unique_ptr<Job> job, CUstream stream);

}  // namespace rgpu::cpusparse
