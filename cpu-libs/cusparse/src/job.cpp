// Submission of a Job: range checks, then reads, compute, writes and release
// queued on the stream with the CPU device's async copies and host functions.
#include "job.h"

#include <exception>

#include "rgpu/common/log.h"
#include "rgpu/cpu_libs/device_memory.h"

namespace rgpu::cpusparse {

namespace {

bool inside_allocation(const Span& s) { return cpu_libs::inside_device_memory(s.ptr, s.bytes); }

void CUDA_CB release_job(void* job) { delete static_cast<Job*>(job); }

}  // namespace

void CUDA_CB run_job(void* p) {
  auto* job = static_cast<Job*>(p);
  if (job->abandoned_.load() || !job->compute) return;
  bool ok = false;
  try {
    ok = job->compute(*job);
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cusparse: compute failed error=%s", e.what());
  }
  if (ok) return;
  RGPU_WARN("cpu cusparse: refused the work, a matrix holds an index out of range; output unchanged");
  if (job->failed) job->failed->store(true);
}

size_t Job::add(const Span& s) {
  spans_.push_back(s);
  return spans_.size() - 1;
}

cusparseStatus_t submit(std::unique_ptr<Job> job, CUstream stream) {
  auto& spans = job->spans_;
  job->buffers_.resize(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].bytes == 0) continue;
    if (!inside_allocation(spans[i])) {
      RGPU_WARN("cpu cusparse: operand outside device memory ptr=0x%llx bytes=%llu",
                static_cast<unsigned long long>(spans[i].ptr), static_cast<unsigned long long>(spans[i].bytes));
      return CUSPARSE_STATUS_INVALID_VALUE;
    }
    job->buffers_[i].resize((spans[i].bytes + 7) / 8);
  }
  // From here on queued steps refer to the job: on a failure it is abandoned
  // (compute skipped) and released by the stream, never deleted under it.
  Job* raw = job.get();
  CUresult r = CUDA_SUCCESS;
  bool queued = false;
  for (size_t i = 0; i < spans.size() && r == CUDA_SUCCESS; ++i) {
    if (spans[i].bytes == 0) continue;
    r = cuMemcpyDtoHAsync(raw->host(i), spans[i].ptr, spans[i].bytes, stream);
    queued |= r == CUDA_SUCCESS;
  }
  if (r == CUDA_SUCCESS) r = cuLaunchHostFunc(stream, run_job, raw);
  if (r == CUDA_SUCCESS) queued = true;
  for (size_t i = 0; i < spans.size() && r == CUDA_SUCCESS; ++i) {
    if (!spans[i].write || spans[i].bytes == 0) continue;
    r = cuMemcpyHtoDAsync(spans[i].ptr, raw->host(i), spans[i].bytes, stream);
  }
  if (r != CUDA_SUCCESS) {
    raw->abandoned_.store(true);
    RGPU_WARN("cpu cusparse: enqueue failed cu_error=%d", static_cast<int>(r));
    if (!queued) return CUSPARSE_STATUS_EXECUTION_FAILED;  // the job dies here
  }
  if (cuLaunchHostFunc(stream, release_job, raw) != CUDA_SUCCESS) {
    RGPU_ERROR("cpu cusparse: job leaked, the stream refused its release");
    r = CUDA_ERROR_INVALID_HANDLE;
  }
  job.release();
  return r == CUDA_SUCCESS ? CUSPARSE_STATUS_SUCCESS : CUSPARSE_STATUS_EXECUTION_FAILED;
}

ContextGuard::ContextGuard(CUcontext ctx) {
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) != CUDA_SUCCESS || !ctx) return;
  if (current == ctx) {
    ok_ = true;
    return;
  }
  pushed_ = ok_ = cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
}

ContextGuard::~ContextGuard() {
  if (pushed_) {
    CUcontext popped;
    cuCtxPopCurrent(&popped);
  }
}

}  // namespace rgpu::cpusparse
