// Submission of a stand-in's Job: range checks, then reads, work, writes and
// release queued on the stream with the CPU device's async copies and host
// functions (rgpu/cpu_libs/job.h).
#include "rgpu/cpu_libs/job.h"

#include <chrono>
#include <exception>

#include "rgpu/common/log.h"
#include "rgpu/cpu_libs/device_memory.h"

namespace rgpu::cpu_libs {

namespace {

bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

// Bytes from the region's first byte to one past its last, in device memory.
bool device_bytes(const Region& r, uint64_t* out) {
  uint64_t a, b;
  return mul(r.count - 1, r.stride, &a) && mul(r.runs - 1, r.pitch, &b) && add(a, b, &a) && add(a, r.width, out);
}

bool host_bytes(const Region& r, uint64_t* out) {
  uint64_t n;
  return mul(r.width, r.runs, &n) && mul(n, r.count, out);
}

CUresult copy_2d(CUdeviceptr dev, char* host, size_t width, size_t height, size_t dev_pitch, bool to_host,
                 CUstream stream) {
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

// Few copies for the common layouts: one for a contiguous region, one
// pitched copy when the entries follow each other run after run, else one
// pitched copy per entry.
CUresult transfer(const Region& r, void* host, bool to_host, CUstream stream, bool* queued) {
  char* h = static_cast<char*>(host);
  const bool entries_follow = r.count == 1 || r.stride == r.runs * r.pitch;
  if (r.pitch == r.width && entries_follow) {
    const size_t all = r.width * r.runs * r.count;
    const CUresult res = to_host ? cuMemcpyDtoHAsync(h, r.ptr, all, stream) : cuMemcpyHtoDAsync(r.ptr, h, all, stream);
    *queued |= res == CUDA_SUCCESS;
    return res;
  }
  if (entries_follow) {
    const CUresult res = copy_2d(r.ptr, h, r.width, r.runs * r.count, r.pitch, to_host, stream);
    *queued |= res == CUDA_SUCCESS;
    return res;
  }
  for (uint64_t e = 0; e < r.count; ++e) {
    const CUresult res =
        copy_2d(r.ptr + e * r.stride, h + e * r.width * r.runs, r.width, r.runs, r.pitch, to_host, stream);
    if (res != CUDA_SUCCESS) return res;
    *queued = true;
  }
  return CUDA_SUCCESS;
}

void CUDA_CB release_job(void* job) { delete static_cast<Job*>(job); }

}  // namespace

void CUDA_CB run_job(void* p) {
  auto* job = static_cast<Job*>(p);
  if (job->abandoned_.load()) return;
  const auto start = std::chrono::steady_clock::now();
  try {
    job->run();
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu %s: compute failed error=%s", job->library_, e.what());
  }
  if (job->usage) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    job->usage->jobs.fetch_add(1, std::memory_order_relaxed);
    job->usage->compute_ns.fetch_add(uint64_t(ns.count()), std::memory_order_relaxed);
  }
}

size_t Job::add(const Region& r) {
  regions_.push_back(r);
  return regions_.size() - 1;
}

Queued submit(std::unique_ptr<Job> job, CUstream stream) {
  const auto& regions = job->regions_;
  const char* lib = job->library_;
  job->buffers_.resize(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    const Region& r = regions[i];
    if (r.empty()) continue;
    uint64_t span, bytes;
    if (!device_bytes(r, &span) || !host_bytes(r, &bytes)) return Queued::kTooLarge;
    if (!inside_device_memory(r.ptr, span)) {
      RGPU_WARN("cpu %s: operand outside device memory ptr=0x%llx bytes=%llu width=%llu runs=%llu count=%llu", lib,
                static_cast<unsigned long long>(r.ptr), static_cast<unsigned long long>(span),
                static_cast<unsigned long long>(r.width), static_cast<unsigned long long>(r.runs),
                static_cast<unsigned long long>(r.count));
      return Queued::kOutside;
    }
    job->buffers_[i].resize((bytes + 7) / 8);  // std::bad_alloc goes to the entry point
  }

  // From here on queued steps refer to the job: on a failure it is abandoned
  // (the work skipped) and released by the stream, never deleted under it.
  Job* raw = job.get();
  CUresult res = CUDA_SUCCESS;
  bool queued = false;  // some step refers to the job
  for (size_t i = 0; i < regions.size() && res == CUDA_SUCCESS; ++i) {
    if (regions[i].read && !regions[i].empty()) res = transfer(regions[i], raw->host(i), true, stream, &queued);
  }
  if (res == CUDA_SUCCESS) res = cuLaunchHostFunc(stream, run_job, raw);
  if (res == CUDA_SUCCESS) queued = true;
  for (size_t i = 0; i < regions.size() && res == CUDA_SUCCESS; ++i) {
    if (regions[i].write && !regions[i].empty()) res = transfer(regions[i], raw->host(i), false, stream, &queued);
  }
  if (res != CUDA_SUCCESS) {
    raw->abandoned_.store(true);
    RGPU_WARN("cpu %s: enqueue failed cu_error=%d", lib, static_cast<int>(res));
    if (!queued) return Queued::kEnqueueFailed;  // the job dies here
  }
  // Captured into a graph, the steps run again at every replay: the job then
  // lives as long as the graph and its executable copies, not one run.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (res == CUDA_SUCCESS && cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
      capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    CUgraph graph = nullptr;
    CUuserObject owner = nullptr;
    job.release();
    if (cuStreamGetCaptureInfo(stream, &capture, nullptr, &graph, nullptr, nullptr, nullptr) == CUDA_SUCCESS &&
        cuUserObjectCreate(&owner, raw, release_job, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) == CUDA_SUCCESS) {
      if (cuGraphRetainUserObject(graph, owner, 1, CU_GRAPH_USER_OBJECT_MOVE) != CUDA_SUCCESS) {
        RGPU_ERROR("cpu %s: job leaked, the capture's graph refused it", lib);
      }
      return Queued::kYes;
    }
    RGPU_ERROR("cpu %s: job leaked, no user object for the capture", lib);
    return Queued::kEnqueueFailed;
  }
  job.release();
  if (cuLaunchHostFunc(stream, release_job, raw) != CUDA_SUCCESS) {
    // Steps already queued may still use it: keep it alive rather than free
    // it under them.
    RGPU_ERROR("cpu %s: job leaked, the stream refused its release", lib);
    return Queued::kEnqueueFailed;
  }
  return res == CUDA_SUCCESS ? Queued::kYes : Queued::kEnqueueFailed;
}

ContextGuard::ContextGuard(CUcontext ctx) {
  CUcontext current = nullptr;
  if (!ctx || cuCtxGetCurrent(&current) != CUDA_SUCCESS) return;
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

}  // namespace rgpu::cpu_libs
