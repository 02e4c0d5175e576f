// A BLAS operand as the common job's region, and submission.
#include "job.h"

#include "rgpu/common/log.h"

namespace rgpu::cpublas {

size_t Job::add(const Operand& op) {
  operands_.push_back(op);
  cpu_libs::Region r;
  if (op.rows < 0 || op.cols < 0 || op.ld < 0 || op.stride < 0 || op.batch < 0) {
    // Refused at submit; no negative number is turned into a byte count.
    malformed_ = true;
    return cpu_libs::Job::add(r);
  }
  const bool none = op.rows == 0 || op.cols == 0 || op.batch == 0;
  r.ptr = op.ptr;
  r.width = none ? 0 : uint64_t(op.rows) * op.elem;
  r.runs = none ? 0 : uint64_t(op.cols);
  r.pitch = uint64_t(op.ld) * op.elem;
  r.count = none ? 0 : uint64_t(op.distinct());
  r.stride = uint64_t(op.stride) * op.elem;
  r.read = op.read;
  r.write = op.write;
  return cpu_libs::Job::add(r);
}

cublasStatus_t submit(std::unique_ptr<Job> job, CUstream stream) {
  if (job->malformed()) {
    RGPU_WARN("cpu cublas: an operand has a negative size, stride or leading dimension");
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  return cpu_libs::submit(std::move(job), stream) == cpu_libs::Queued::kYes ? CUBLAS_STATUS_SUCCESS
                                                                              : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace rgpu::cpublas
