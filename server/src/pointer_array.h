// An array of device pointers that lives in device memory (the batched
// LAPACK-like calls of cuBLAS and cuSOLVER: Aarray[i] is matrix i), checked
// for a generated row (ptrs= in api/*.api). The array's own
// range is checked by the row like any device argument; this reads it and
// checks every pointer in it.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "call_env.h"
#include "dispatch.h"

namespace rgpu::server {

// Lives on a row's stack. load() waits for the context's device work (the
// array may be written by a copy or kernel queued before the call), reads
// the array, checks each pointer against the calling context's allocations
// for `each` bytes, and writes the checked pointers to a device buffer of
// rgpud's own that the library is given instead of the client's array: the
// client can no longer change what the library dereferences. The destructor
// waits for the context's work again (the library reads the copy from its
// stream) and frees the copy, so such a call runs synchronously on rgpud.
// Not thread-safe; the context current at load() must be current at
// destruction (the row's).
class PointerArray {
 public:
  explicit PointerArray(CallEnv& env) : env_(env) {}
  ~PointerArray();
  PointerArray(const PointerArray&) = delete;
  PointerArray& operator=(const PointerArray&) = delete;

  // A refusal (`invalid`, prefixed with `what`) for a count that is negative
  // or above kMaxPointers, an array the driver cannot read, or a pointer
  // outside the context's memory; code 0 when every pointer is checked.
  InvokeOutcome load(wire::Api api, uint32_t invalid, const char* what, uint64_t array, uint64_t count,
                     uint64_t each);

  // rgpud's copy of the checked array (0 before a successful load, or for
  // an empty one).
  CUdeviceptr device() const { return copy_; }

  // The most pointers one array may hold: 1 << 20 (8 MiB read per call).
  static constexpr uint64_t kMaxPointers = uint64_t{1} << 20;

 private:
  CallEnv& env_;
  CUdeviceptr copy_ = 0;
};

}  // namespace rgpu::server
