// A stream-ordered unit of work of the cuDNN stand-in on the CPU device's
// memory: each operand's byte span is copied into a host buffer by the CPU
// device's asynchronous copies, `compute` runs as a host function on the same
// stream, and the written spans are copied back. So the work runs in stream
// order after the call returns, and every device access is range- and
// isolation-checked by the CPU device when it happens (as the cuBLAS
// stand-in does, cpu-libs/cublas/src/job.h).
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace rgpu::cpudnn {

// Work done for one handle: jobs run and the time their compute took, in
// nanoseconds (the copies in and out are the CPU device's, not counted).
struct Usage {
  std::atomic<uint64_t> jobs{0};
  std::atomic<uint64_t> compute_ns{0};
};

struct Span {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
  bool read = false;   // copied in before compute
  bool write = false;  // copied out after compute
};

// Lifetime: built by the caller, handed to submit(), then owned by the
// stream until its last host function deletes it. Thread safety: the stream
// runs its steps one at a time, in order; no other thread touches it.
class Job {
 public:
  // Adds an operand; returns its index for host().
  size_t add(const Span& s);
  // The host copy of operand `i` (8-byte aligned; zero filled unless read).
  void* host(size_t i) { return buffers_[i].data(); }

  // Runs on a host function of the stream after every read has been copied.
  // Must not call the driver API. Exceptions are caught and logged.
  std::function<void(Job&)> compute;
  // Where the compute's time is counted, if anywhere.
  std::shared_ptr<Usage> usage;

 private:
  friend cudnnStatus_t submit(std::unique_ptr<Job> job, CUstream stream);
  friend void run_job(void* job);
  std::vector<Span> spans_;
  std::vector<std::vector<uint64_t>> buffers_;
  std::atomic<bool> abandoned_{false};
};

// Checks every operand against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// CUDNN_STATUS_SUCCESS once queued; CUDNN_STATUS_BAD_PARAM when an operand
// is outside one live allocation; CUDNN_STATUS_EXECUTION_FAILED when the
// driver refuses an enqueue.
cudnnStatus_t submit(std::unique_ptr<Job> job, CUstream stream);

// Makes a context current for the life of the guard, restoring the previous.
class ContextGuard {
 public:
  explicit ContextGuard(CUcontext ctx);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
  bool pushed_ = false;
};

}  // namespace rgpu::cpudnn
