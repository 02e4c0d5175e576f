// The stand-in's plans. cuFFT names a plan by an int, so the stand-in keeps
// a table from those ints to its plans: the one piece of process-wide state
// the ABI forces on it (PlanTable, created on first use).
#pragma once

#include <cuda.h>
#include <cufftXt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "rgpu/protocol/cufft_wire.h"

namespace rgpu::cpufft {

// One plan: the context it was created in, its stream and, once made, its
// geometry. Thread safety: as cuFFT, a plan is configured by one thread at
// a time; executions copy what they need, so a plan may be destroyed while
// its work is queued.
struct Plan {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
  bool made = false;
  protocol::cufft::Geometry geometry;
};

// Thread-safe.
class PlanTable {
 public:
  cufftHandle add(std::shared_ptr<Plan> p);
  std::shared_ptr<Plan> find(cufftHandle h);
  bool remove(cufftHandle h);

 private:
  std::mutex mu_;
  cufftHandle next_ = 1;
  std::map<cufftHandle, std::shared_ptr<Plan>> plans_;
};

PlanTable& plans();

// Queues `plan`'s execution on its stream: the input and output spans are
// copied to host buffers, transformed with FFTW, and the output copied
// back. Checks both spans against the current context's allocations first.
cufftResult execute(const Plan& plan, CUdeviceptr in, CUdeviceptr out, int direction);

}  // namespace rgpu::cpufft
