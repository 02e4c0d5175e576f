// The cuBLAS and cuSOLVER stand-ins' unit of stream-ordered work: the
// common job (rgpu/cpu_libs/job.h) with its operands described as BLAS
// matrices.
#pragma once

#include <cuda.h>
#include <cublas_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rgpu/cpu_libs/job.h"

namespace rgpu::cpublas {

using cpu_libs::ContextGuard;

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

// The host copy of operand `i` is compact columns (ld = rows), batches
// host_stride() apart.
class Job : public cpu_libs::JobOf<Job> {
 public:
  Job() : JobOf("cublas") {}
  // Adds an operand; returns its index for host().
  size_t add(const Operand& op);
  const Operand& operand(size_t i) const { return operands_[i]; }
  // Some operand has a negative extent: submit() refuses the job.
  bool malformed() const { return malformed_; }

 private:
  std::vector<Operand> operands_;
  bool malformed_ = false;
};

// Checks every operand against the current context's allocations, then
// enqueues the reads, compute, the writes and the job's release on `stream`.
// The current context must be the stream's. Returns CUBLAS_STATUS_SUCCESS
// once everything is queued; CUBLAS_STATUS_EXECUTION_FAILED when an operand
// is not inside one live allocation or the driver refuses an enqueue.
// Host buffers that cannot be allocated throw std::bad_alloc, which the
// entry points map to CUBLAS_STATUS_ALLOC_FAILED.
cublasStatus_t submit(std::unique_ptr<Job> job, CUstream stream);

}  // namespace rgpu::cpublas
