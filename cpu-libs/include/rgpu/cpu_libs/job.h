// A stream-ordered unit of work of a CPU stand-in library, on the CPU
// device's memory; one implementation for every stand-in (cpu-libs/common).
//
// Each region a job reads is copied from device memory into a host buffer by
// the CPU device's own asynchronous copies, the work runs as a host function
// on the same stream, and each region it writes is copied back. So the work
// runs in stream order after the call returns, and every device access is
// range- and isolation-checked by the CPU device when it happens: memory
// freed while the work was queued fails the copy instead of faulting the
// process. Captured into a graph, the job lives as long as the graph and
// runs at every replay.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace rgpu::cpu_libs {

// Work done for one handle: jobs run and the time their work took, in
// nanoseconds (the copies in and out are the CPU device's, not counted).
struct Usage {
  std::atomic<uint64_t> jobs{0};
  std::atomic<uint64_t> compute_ns{0};
};

// Device bytes a job reads or writes: `count` entries `stride` bytes apart,
// each `runs` runs of `width` bytes `pitch` bytes apart. The host buffer
// holds them compact: width * runs * count bytes, entry after entry. Only
// those bytes are copied, never the gaps between runs, as a GPU kernel
// would write them.
struct Region {
  CUdeviceptr ptr = 0;
  uint64_t width = 0;
  uint64_t runs = 1;
  uint64_t pitch = 0;  // >= width when runs > 1
  uint64_t count = 1;
  uint64_t stride = 0;  // >= runs * pitch when count > 1
  bool read = false;    // copied in before the work
  bool write = false;   // copied out after the work

  // `bytes` contiguous bytes at `ptr`.
  static Region span(CUdeviceptr ptr, uint64_t bytes, bool read, bool write) {
    return Region{ptr, bytes, 1, bytes, 1, 0, read, write};
  }
  bool empty() const { return width == 0 || runs == 0 || count == 0; }
};

// What submit() did; each library maps it to its own status.
enum class Queued {
  kYes,            // reads, work, writes and release queued
  kOutside,        // a region is not inside live memory of the current context
  kTooLarge,       // a region's size overflows
  kEnqueueFailed,  // the driver refused a step
};

// Lifetime: built by the caller, handed to submit(), then owned by the
// stream (or a captured graph) until its release. Thread safety: the stream
// runs its steps one at a time, in order; no other thread touches it.
class Job {
 public:
  // `library` names the stand-in in log lines ("cublas").
  explicit Job(const char* library) : library_(library) {}
  virtual ~Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Adds a region; returns its index for host().
  size_t add(const Region& r);
  // The host copy of region `i` (8-byte aligned; zero filled unless read).
  void* host(size_t i) { return buffers_[i].data(); }
  const Region& region(size_t i) const { return regions_[i]; }
  size_t regions() const { return regions_.size(); }
  const char* library() const { return library_; }

  // Where the work's time is counted, if anywhere.
  std::shared_ptr<Usage> usage;

 protected:
  // The work, on a host function of the stream after every read has been
  // copied. Must not call the driver API. Exceptions are caught and logged.
  virtual void run() = 0;

 private:
  friend Queued submit(std::unique_ptr<Job> job, CUstream stream);
  friend void run_job(void* job);
  const char* library_;
  std::vector<Region> regions_;
  std::vector<std::vector<uint64_t>> buffers_;
  std::atomic<bool> abandoned_{false};  // submission failed half way: the work does nothing
};

// A job whose work is a function of the library's own job type `Self`
// (`class Job : public JobOf<Job>`), set by the caller before submit().
template <class Self>
class JobOf : public Job {
 public:
  using Job::Job;
  std::function<void(Self&)> compute;

 protected:
  void run() override {
    if (compute) compute(static_cast<Self&>(*this));
  }
};

// Checks every region against the current context's allocations, then
// enqueues the reads, the work, the writes and the job's release on
// `stream`. The current context must be the stream's. Host buffers that
// cannot be allocated throw std::bad_alloc, before anything is queued.
Queued submit(std::unique_ptr<Job> job, CUstream stream);

// Makes a context current for the life of the guard (the one a handle was
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

}  // namespace rgpu::cpu_libs
