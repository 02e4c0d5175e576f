// A stream-ordered unit of work of the cuSPARSE stand-in on the CPU device's
// memory: each operand's byte span is copied into a host buffer by the CPU
// device's asynchronous copies, `compute` runs as a host function on the
// same stream, and the written spans are copied back (as the cuDNN
// stand-in's jobs, cpu-libs/cudnn/src/job.h). Every device access is range-
// and isolation-checked by the CPU device when it happens. A written span is
// always read first, so compute that refuses its input leaves it unchanged.
#pragma once

#include <cuda.h>
#include <cusparse.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace rgpu::cpusparse {

struct Span {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
  bool write = false;  // copied out after compute (and in before it)
};

// Lifetime: built by the caller, handed to submit(), then owned by the
// stream until its last host function deletes it. Thread safety: the stream
// runs its steps one at a time, in order; no other thread touches it.
class Job {
 public:
  size_t add(const Span& s);
  // The host copy of operand `i` (8-byte aligned).
  void* host(size_t i) { return buffers_[i].data(); }
  uint64_t bytes(size_t i) const { return spans_[i].bytes; }

  // Runs on a host function of the stream after every span has been copied
  // in. Must not call the driver API. Returns false when the input is bad
  // (an index out of range): the handle's `failed` is then set.
  std::function<bool(Job&)> compute;
  std::shared_ptr<std::atomic<bool>> failed;

 private:
  friend cusparseStatus_t submit(std::unique_ptr<Job> job, CUstream stream);
  friend void run_job(void* job);
  std::vector<Span> spans_;
  std::vector<std::vector<uint64_t>> buffers_;
  std::atomic<bool> abandoned_{false};
};

// Checks every span against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// CUSPARSE_STATUS_SUCCESS once queued; CUSPARSE_STATUS_INVALID_VALUE when a
// span is outside one live allocation (an array shorter than its
// descriptor says); CUSPARSE_STATUS_EXECUTION_FAILED when the driver refuses
// an enqueue.
cusparseStatus_t submit(std::unique_ptr<Job> job, CUstream stream);

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

}  // namespace rgpu::cpusparse
