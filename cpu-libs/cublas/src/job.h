// A stream-ordered unit of work on the CPU device's memory. Its operands are
// copied from device memory into host buffers by the CPU device's own
// asynchronous copies, `compute` runs as a host function on the same stream,
// and the outputs are copied back, so the work runs in stream order, after
// the call returns, and every device access is range- and isolation-checked
// by the CPU device when it happens (memory freed while the work was queued
// fails the copy instead of faulting the process).
#pragma once

#include <cuda.h>
#include <cublas_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace rgpu::cpublas {

// A column-major matrix (or a batch of them) in device memory. A vector with
// increment inc is a 1 x len matrix with ld = |inc|.
struct Operand {
  CUdeviceptr ptr = 0;
  size_t elem = 0;     // bytes per element
  int64_t rows = 0;    // as stored
  int64_t cols = 0;
  int64_t ld = 0;      // elements between columns, >= rows
  int64_t stride = 0;  // elements between batch entries; 0: one matrix for all
  int64_t batch = 1;
  bool read = false;   // copied in before compute
  bool write = false;  // copied out after compute

  // Batch entries actually distinct in memory (1 when stride is 0).
  int64_t distinct() const { return stride == 0 ? 1 : batch; }
  // Elements between batch entries in the host buffer (compact, ld = rows).
  int64_t host_stride() const { return stride == 0 ? 0 : rows * cols; }
};

// Lifetime: built by the caller, handed to submit(), then owned by the
// stream until its last host function deletes it. Thread safety: the stream
// runs its steps one at a time, in order; no other thread touches it.
class Job {
 public:
  // Adds an operand; returns its index for host().
  size_t add(const Operand& op);
  // The host copy of operand `i`: compact columns (ld = rows), batches
  // host_stride() apart. 8-byte aligned; zero filled unless read.
  void* host(size_t i) { return buffers_[i].data(); }
  const Operand& operand(size_t i) const { return operands_[i]; }

  // Runs on a host function of the stream after every read has been copied.
  // Must not call the driver API. Exceptions are caught and logged.
  std::function<void(Job&)> compute;

 private:
  friend cublasStatus_t submit(std::unique_ptr<Job> job, CUstream stream);
  friend void run_job(void* job);
  std::vector<Operand> operands_;
  std::vector<std::vector<double>> buffers_;
  std::atomic<bool> abandoned_{false};  // submission failed half way: compute does nothing
};

// Checks every operand against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// The current context must be the stream's. Returns CUBLAS_STATUS_SUCCESS
// once everything is queued; CUBLAS_STATUS_EXECUTION_FAILED when an operand
// is not inside one live allocation or the driver refuses an enqueue;
// CUBLAS_STATUS_ALLOC_FAILED when host buffers cannot be allocated.
cublasStatus_t submit(std::unique_ptr<Job> job, CUstream stream);

// Makes a context current for the life of the guard (what the handle was
// created in), restoring the previous one after.
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

}  // namespace rgpu::cpublas
