// cuSPARSE on the client: the generic API's descriptors as client objects
// (cusparse.h declares the structs opaque; rgpu defines them here), and what
// the hand-written entry points share.
#pragma once

#include <cusparse.h>

#include <cstdint>

#include "rgpu/protocol/cusparse_wire.h"

// Each descriptor starts with a magic number so that a stale or foreign
// pointer is answered CUSPARSE_STATUS_INVALID_VALUE rather than read as one.
// Lifetime: created and destroyed by the application; thread safety: as
// cuSPARSE's, a descriptor is not changed concurrently with its use.
struct cusparseSpMatDescr {
  static constexpr uint32_t kMagic = 0x73706d74;
  uint32_t magic = kMagic;
  rgpu::protocol::cusparse::SpMat m;
};
struct cusparseDnMatDescr {
  static constexpr uint32_t kMagic = 0x646e6d74;
  uint32_t magic = kMagic;
  rgpu::protocol::cusparse::DnMat m;
};
struct cusparseDnVecDescr {
  static constexpr uint32_t kMagic = 0x646e7663;
  uint32_t magic = kMagic;
  rgpu::protocol::cusparse::DnVec v;
};

namespace rgpu::shim::cusparse {

// True when `d` is a live descriptor of its type.
template <class T>
bool live(const T* d) {
  return d != nullptr && d->magic == T::kMagic;
}

}  // namespace rgpu::shim::cusparse
