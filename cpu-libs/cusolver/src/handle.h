// The stand-in's handles: cuSOLVER's cusolverDnContext, its parameter set
// for the 64-bit API and the Jacobi methods' settings (opaque in NVIDIA's
// headers, defined here).
#pragma once

#include <cuda.h>
#include <cusolverDn.h>

// One cuSOLVER handle: the context it was created in and the stream its
// calls are ordered on. Thread safety: as cuSOLVER, used from one thread at
// a time.
struct cusolverDnContext {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
};

// The 64-bit API's options: accepted, nothing in them changes the result.
struct cusolverDnParams {};

// A Jacobi method's settings. LAPACK's direct methods stand in for the
// Jacobi iterations, so tolerance and sweeps only answer what was set;
// the result is always sorted (ascending eigenvalues, descending singular
// values), which cuSOLVER's default ordering is too.
struct gesvdjInfo {
  double tolerance = 0;
  int max_sweeps = 100;
  int sort = 1;
};
struct syevjInfo {
  double tolerance = 0;
  int max_sweeps = 100;
  int sort = 1;
};
