// Submission of a Job: range checks, then reads, compute, writes and release
// queued on the stream with the CPU device's async copies and host functions.
#include "job.h"

#include <exception>
#include <new>

#include "rgpu/common/log.h"
#include "rgpu/cpu_libs/device_memory.h"

namespace rgpu::cpublas {

namespace {

bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

bool empty(const Operand& op) { return op.rows == 0 || op.cols == 0 || op.batch == 0; }

// Bytes from the first element to one past the last, in device memory.
bool span_bytes(const Operand& op, uint64_t* out) {
  uint64_t a, b, elems;
  if (!mul(uint64_t(op.distinct() - 1), uint64_t(op.stride), &a)) return false;
  if (!mul(uint64_t(op.cols - 1), uint64_t(op.ld), &b)) return false;
  if (!add(a, b, &elems) || !add(elems, uint64_t(op.rows), &elems)) return false;
  return mul(elems, op.elem, out);
}

bool host_bytes(const Operand& op, uint64_t* out) {
  uint64_t n;
  return mul(uint64_t(op.rows), uint64_t(op.cols), &n) && mul(n, uint64_t(op.distinct()), &n) && mul(n, op.elem, out);
}

// True when the operand lies inside live memory of the current context.
bool inside_allocation(const Operand& op) {
  uint64_t bytes;
  return span_bytes(op, &bytes) && cpu_libs::inside_device_memory(op.ptr, bytes);
}

CUresult copy_2d(CUdeviceptr dev, char* host, size_t width, size_t height, size_t dev_pitch,
                 bool to_host, CUstream stream) {
  CUDA_MEMCPY2D c{};
  c.WidthInBytes = width;
  c.Height = height;
  if (to_host) {
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = dev;
    c.srcPitch = dev_pitch;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = width;
  } else {
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = width;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dev;
    c.dstPitch = dev_pitch;
  }
  return cuMemcpy2DAsync(&c, stream);
}

// Few copies for the common layouts: one for contiguous batches, one pitched
// copy when the batches follow each other column after column, else one
// pitched copy per batch entry. Only the rows x cols elements are written,
// never the gaps between columns, as a GPU kernel would.
CUresult transfer(const Operand& op, void* host, bool to_host, CUstream stream, bool* queued) {
  const size_t width = size_t(op.rows) * op.elem;
  const size_t pitch = size_t(op.ld) * op.elem;
  const int64_t n = op.distinct();
  char* h = static_cast<char*>(host);
  if (op.ld == op.rows && (n == 1 || op.stride == op.rows * op.cols)) {
    size_t all = width * size_t(op.cols) * size_t(n);
    CUresult r = copy_2d(op.ptr, h, all, 1, all, to_host, stream);
    *queued |= r == CUDA_SUCCESS;
    return r;
  }
  if (n == 1 || op.stride == op.ld * op.cols) {
    CUresult r = copy_2d(op.ptr, h, width, size_t(op.cols) * size_t(n), pitch, to_host, stream);
    *queued |= r == CUDA_SUCCESS;
    return r;
  }
  for (int64_t b = 0; b < n; ++b) {
    CUresult r = copy_2d(op.ptr + uint64_t(b) * uint64_t(op.stride) * op.elem,
                         h + size_t(b) * width * size_t(op.cols), width, size_t(op.cols), pitch, to_host, stream);
    if (r != CUDA_SUCCESS) return r;
    *queued = true;
  }
  return CUDA_SUCCESS;
}

void CUDA_CB release_job(void* job) { delete static_cast<Job*>(job); }

}  // namespace

void CUDA_CB run_job(void* p) {
  auto* job = static_cast<Job*>(p);
  if (job->abandoned_.load() || !job->compute) return;
  try {
    job->compute(*job);
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cublas: compute failed error=%s", e.what());
  }
}

size_t Job::add(const Operand& op) {
  operands_.push_back(op);
  return operands_.size() - 1;
}

cublasStatus_t submit(std::unique_ptr<Job> job, CUstream stream) {
  auto& ops = job->operands_;
  job->buffers_.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operand& op = ops[i];
    if (empty(op)) continue;
    if (!inside_allocation(op)) {
      RGPU_WARN("cpu cublas: operand outside device memory ptr=0x%llx rows=%lld cols=%lld ld=%lld batch=%lld",
                static_cast<unsigned long long>(op.ptr), static_cast<long long>(op.rows),
                static_cast<long long>(op.cols), static_cast<long long>(op.ld), static_cast<long long>(op.batch));
      return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    uint64_t bytes;
    if (!host_bytes(op, &bytes)) return CUBLAS_STATUS_ALLOC_FAILED;
    job->buffers_[i].resize((bytes + 7) / 8);  // std::bad_alloc is mapped by the entry point
  }

  // From here on queued steps refer to the job: on a failure it is abandoned
  // (compute skipped) and released by the stream, never deleted under it.
  Job* raw = job.get();
  CUresult r = CUDA_SUCCESS;
  bool queued = false;  // some step refers to the job
  for (size_t i = 0; i < ops.size() && r == CUDA_SUCCESS; ++i) {
    if (ops[i].read && !empty(ops[i])) r = transfer(ops[i], raw->host(i), true, stream, &queued);
  }
  if (r == CUDA_SUCCESS) r = cuLaunchHostFunc(stream, run_job, raw);
  if (r == CUDA_SUCCESS) queued = true;
  for (size_t i = 0; i < ops.size() && r == CUDA_SUCCESS; ++i) {
    if (ops[i].write && !empty(ops[i])) r = transfer(ops[i], raw->host(i), false, stream, &queued);
  }
  if (r != CUDA_SUCCESS) {
    raw->abandoned_.store(true);
    RGPU_WARN("cpu cublas: enqueue failed cu_error=%d", static_cast<int>(r));
    if (!queued) return CUBLAS_STATUS_EXECUTION_FAILED;  // the job dies here
  }
  // Captured into a graph, the steps run again at every replay: the job then
  // lives as long as the graph and its executable copies, not one run.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (r == CUDA_SUCCESS && cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
      capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    CUgraph graph = nullptr;
    CUuserObject owner = nullptr;
    if (cuStreamGetCaptureInfo(stream, &capture, nullptr, &graph, nullptr, nullptr, nullptr) == CUDA_SUCCESS &&
        cuUserObjectCreate(&owner, raw, release_job, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) == CUDA_SUCCESS) {
      if (cuGraphRetainUserObject(graph, owner, 1, CU_GRAPH_USER_OBJECT_MOVE) != CUDA_SUCCESS) {
        RGPU_ERROR("cpu cublas: job leaked, the capture's graph refused it");
      }
      job.release();
      return CUBLAS_STATUS_SUCCESS;
    }
    RGPU_ERROR("cpu cublas: job leaked, no user object for the capture");
    job.release();
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  if (cuLaunchHostFunc(stream, release_job, raw) != CUDA_SUCCESS) {
    // Steps already queued may still use it: keep it alive rather than free
    // it under them.
    RGPU_ERROR("cpu cublas: job leaked, the stream refused its release");
    r = CUDA_ERROR_INVALID_HANDLE;
  }
  job.release();
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
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

}  // namespace rgpu::cpublas
