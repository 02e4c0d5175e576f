// The cuSPARSE stand-in's job: refused input marks the handle.
#include "job.h"

#include "rgpu/common/log.h"

namespace rgpu::cpusparse {

void Job::run() {
  if (!compute || compute(*this)) return;
  RGPU_WARN("cpu cusparse: refused the work, a matrix holds an index out of range; output unchanged");
  if (failed) failed->store(true);
}

cusparseStatus_t submit(std::unique_ptr<Job> job, CUstream stream) {
  switch (cpu_libs::submit(std::move(job), stream)) {
    case cpu_libs::Queued::kYes: return CUSPARSE_STATUS_SUCCESS;
    case cpu_libs::Queued::kOutside:
    case cpu_libs::Queued::kTooLarge: return CUSPARSE_STATUS_INVALID_VALUE;
    case cpu_libs::Queued::kEnqueueFailed: break;
  }
  return CUSPARSE_STATUS_EXECUTION_FAILED;
}

}  // namespace rgpu::cpusparse
