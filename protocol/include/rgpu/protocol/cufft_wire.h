// cuFFT's calls as rgpu sends them. A cuFFT plan is an `int` the program
// holds; rgpu mints a typed handle for it (kind kPlanKind) and rgpud keeps,
// under that handle, the library's plan and the plan's geometry, so that
// every execution can be checked against the session's memory before the
// library runs. Every way of making a plan (cufftPlan1d/2d/3d, PlanMany,
// MakePlan*, XtMakePlanMany) travels as one Geometry; pure functions here
// (protocol/src/cufft_wire.cpp).
#pragma once

#include <cstdint>

#include "handle_kinds.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::protocol::cufft {

// The hand-written calls' ordinals (Call.invoke's function for api CUFFT),
// above the generated calls' (api/cufft.lock: the version).
enum Fn : uint32_t {
  kFirstHandFn = 1000,
  kCreate = 1001,            // async: plan handle
  kDestroy = 1002,           // async: plan handle
  kSetStream = 1003,         // async: plan handle, stream handle
  kSetAutoAllocation = 1004, // async: plan handle, int
  kSetWorkArea = 1005,       // async: plan handle, device address
  kMakePlan = 1006,          // sync: plan handle, Geometry -> work bytes
  kEstimate = 1007,          // sync: Geometry -> work bytes (no plan is kept)
  kGetSize = 1008,           // sync: plan handle -> work bytes
  kExec = 1009,              // async: plan handle, input address, output address, direction
  kLastHandFn = 1009,
};

inline constexpr uint8_t kPlanKind = handle_kinds::kCufftPlan;
inline constexpr int kMaxRank = 3;

// cudaDataType values a plan may name (library_types.h).
inline constexpr int32_t kR16F = 2, kC16F = 6, kR16BF = 14, kC16BF = 15;
inline constexpr int32_t kR32F = 0, kC32F = 4, kR64F = 1, kC64F = 5;

// One plan's shape, as cufftXtMakePlanMany takes it. An absent embed means
// cuFFT's basic layout: packed, and the stride and distance are ignored.
struct Geometry {
  int32_t rank = 0;
  int64_t n[kMaxRank] = {};
  bool has_inembed = false;
  int64_t inembed[kMaxRank] = {};
  int64_t istride = 1, idist = 0;
  bool has_onembed = false;
  int64_t onembed[kMaxRank] = {};
  int64_t ostride = 1, odist = 0;
  int32_t itype = kC32F, otype = kC32F, etype = kC32F;
  int64_t batch = 1;
};

// cufftType values (cufft.h) as the geometry's three types; false for a
// value cuFFT does not have.
bool types_of(int32_t cufft_type, int32_t* itype, int32_t* otype, int32_t* etype);

// What kind of transform the types make: complex to complex, real to
// complex, complex to real; kNone for a combination cuFFT refuses.
enum class Kind { kNone, kC2C, kR2C, kC2R };
Kind kind_of(const Geometry& g);

// Why a geometry is not one rgpu accepts (null when it is): a rank outside
// 1..3, a size, batch or stride below 1, a distance below 0, an embed below
// 1, or types that make no transform.
const char* check(const Geometry& g);

// Bytes of one element of `type`; 0 for a type a plan cannot name.
uint64_t element_bytes(int32_t type);

// How one side of an execution lies in memory, in elements of its type:
// element (i0, i1, i2) of batch entry b is at
// b*dist + ((i0*embed[1] + i1)*embed[2] + i2)*stride, i_k below dims[k].
struct Layout {
  int64_t dims[kMaxRank] = {};
  int64_t embed[kMaxRank] = {};
  int64_t stride = 1, dist = 0;
};
// False when the geometry fails check() or a size overflows.
bool layout(const Geometry& g, bool input, bool in_place, Layout* out);

// Bytes the input (`input` true) or the output of one execution spans from
// its address, as cuFFT lays them out: the logical sizes of that side (the
// last dimension n/2+1 on the complex side of a real transform), the embed
// and stride (or the basic layout, padded to 2*(n/2+1) reals in the last
// dimension on the real side of an in-place real transform), batch entries
// a distance apart. kNoExtent when it overflows.
uint64_t extent_bytes(const Geometry& g, bool input, bool in_place);

void write_geometry(ArgWriter& w, const Geometry& g);
// Leaves `r` failed when the bytes are not a geometry of rank 1..3.
bool read_geometry(ArgReader& r, Geometry* g);

}  // namespace rgpu::protocol::cufft
