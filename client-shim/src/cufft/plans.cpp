// cuFFT's entry points (api/cufft.api's hand lines). A plan is
// an int the program holds: the int form of the plan's typed handle (kind
// cufft::kPlanKind; rgpu/protocol/handles.h, "Int form"), so no table is
// needed to map one to the other; a process that has minted 2^24 handles of
// any kind gets CUFFT_ALLOC_FAILED for new plans. Every way
// of making a plan becomes one cufftXtMakePlanMany geometry
// (rgpu/protocol/cufft_wire.h); every execution one cufftXtExec.
#include <cufftXt.h>

#include <cstdint>
#include <span>
#include <vector>

#include "../library_calls.h"
#include "../route.h"
#include "../shim.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/cufft_wire.h"

namespace {

namespace fw = ::rgpu::protocol::cufft;
namespace wire = ::rgpu::wire;
using ::rgpu::protocol::ArgReader;
using ::rgpu::protocol::ArgWriter;
using ::rgpu::protocol::HandleKind;
using ::rgpu::shim::Route;
using ::rgpu::shim::Shim;
constexpr auto kApi = wire::Api::CUFFT;
constexpr auto kKind = static_cast<HandleKind>(fw::kPlanKind);

bool to_int(uint64_t h, cufftHandle* out) {
  static_assert(sizeof(cufftHandle) == sizeof(int32_t));
  int32_t v = 0;
  if (!::rgpu::protocol::to_int_form(h, &v)) return false;
  *out = v;
  return true;
}

uint64_t from_int(cufftHandle plan) { return ::rgpu::protocol::from_int_form(kKind, plan); }

// The call's process state and route by `plan`; false when there is no
// runtime, or the plan is not one of this process's live plans.
struct Call {
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  uint64_t handle = 0;
  Route route;
};
cufftResult enter(Call* c) {
  if (!::rgpu::shim::library_enter(&c->shim, &c->ctx)) return CUFFT_SETUP_FAILED;
  c->route = c->shim->route_current(c->ctx);
  return CUFFT_SUCCESS;
}
cufftResult enter_plan(cufftHandle plan, Call* c) {
  if (cufftResult r = enter(c); r != CUFFT_SUCCESS) return r;
  c->handle = from_int(plan);
  if (!c->shim->has_handle(c->handle, kKind)) return CUFFT_INVALID_PLAN;
  c->route = c->shim->route_handle(c->handle, c->ctx);
  return CUFFT_SUCCESS;
}

void send_async(const Call& c, uint32_t fn, const ArgWriter& args) {
  const auto& bytes = args.bytes();
  c.route.client->call_async(c.route.ctx, [&](wire::Call::Builder call) {
    ::rgpu::protocol::set_invoke(call, kApi, fn, bytes, false);
  });
}

// A sync call whose reply is one work size.
cufftResult send_for_size(const Call& c, uint32_t fn, const ArgWriter& args, size_t* work) {
  const auto& bytes = args.bytes();
  std::vector<std::byte> buf(64);
  uint64_t got = 0;
  ::rgpu::shim::SyncResult r = c.route.client->call_sync(
      c.route.ctx, [&](wire::Call::Builder call) { ::rgpu::protocol::set_invoke(call, kApi, fn, bytes, true); }, {},
      ::rgpu::shim::OutBuffer{buf.data(), buf.size(), &got});
  if (r.code != 0) return static_cast<cufftResult>(::rgpu::shim::library_status(r, kApi, CUFFT_EXEC_FAILED));
  ArgReader rd(std::span<const std::byte>(buf.data(), got));
  uint64_t w = 0;
  rd.u64(&w);
  if (!rd.finish()) return CUFFT_INTERNAL_ERROR;
  if (work) *work = static_cast<size_t>(w);
  return CUFFT_SUCCESS;
}

template <class F>
cufftResult guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUFFT_ALLOC_FAILED;
  } catch (...) {
    return CUFFT_INTERNAL_ERROR;
  }
}

// A geometry from the classic calls' arguments (int or long long arrays).
template <class T>
cufftResult geometry(int rank, const T* n, const T* inembed, T istride, T idist, const T* onembed, T ostride,
                     T odist, int32_t itype, int32_t otype, int32_t etype, T batch, fw::Geometry* g) {
  if (rank < 1 || rank > fw::kMaxRank) return CUFFT_INVALID_SIZE;
  if (!n) return CUFFT_INVALID_VALUE;
  g->rank = rank;
  for (int i = 0; i < rank; ++i) g->n[i] = n[i];
  g->has_inembed = inembed != nullptr;
  g->has_onembed = onembed != nullptr;
  // cuFFT ignores the other embed when only one is given.
  if (g->has_inembed != g->has_onembed) g->has_inembed = g->has_onembed = false;
  for (int i = 0; i < rank; ++i) {
    if (g->has_inembed) g->inembed[i] = inembed[i];
    if (g->has_onembed) g->onembed[i] = onembed[i];
  }
  g->istride = istride;
  g->idist = idist;
  g->ostride = ostride;
  g->odist = odist;
  g->itype = itype;
  g->otype = otype;
  g->etype = etype;
  g->batch = batch;
  for (int i = 0; i < rank; ++i) {
    if (g->n[i] < 1) return CUFFT_INVALID_SIZE;
  }
  if (fw::check(*g)) return CUFFT_INVALID_VALUE;
  return CUFFT_SUCCESS;
}

template <class T>
cufftResult classic(int rank, const T* n, const T* inembed, T istride, T idist, const T* onembed, T ostride,
                    T odist, cufftType type, T batch, fw::Geometry* g) {
  int32_t it = 0, ot = 0, et = 0;
  if (!fw::types_of(type, &it, &ot, &et)) return CUFFT_INVALID_TYPE;
  return geometry(rank, n, inembed, istride, idist, onembed, ostride, odist, it, ot, et, batch, g);
}

cufftResult make(cufftHandle plan, const fw::Geometry& g, size_t* work) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    w.u64(c.handle);
    fw::write_geometry(w, g);
    return send_for_size(c, fw::kMakePlan, w, work);
  });
}

cufftResult estimate(const fw::Geometry& g, size_t* work) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter(&c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    fw::write_geometry(w, g);
    return send_for_size(c, fw::kEstimate, w, work);
  });
}

cufftResult exec(cufftHandle plan, const void* in, const void* out, int direction) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    w.u64(c.handle);
    w.u64(reinterpret_cast<uintptr_t>(in));
    w.u64(reinterpret_cast<uintptr_t>(out));
    w.scalar(static_cast<int32_t>(direction));
    send_async(c, fw::kExec, w);
    return CUFFT_SUCCESS;
  });
}

// The classic 1d/2d/3d shapes.
fw::Geometry shape(int rank, int nx, int ny, int nz, cufftType type, int batch, cufftResult* r) {
  fw::Geometry g;
  const int n[3] = {nx, ny, nz};
  *r = classic<int>(rank, n, nullptr, 1, 0, nullptr, 1, 0, type, batch, &g);
  return g;
}

}  // namespace

RGPU_EXPORT cufftResult cufftCreate(cufftHandle* handle) {
  if (!handle) return CUFFT_INVALID_VALUE;
  return guarded([&] {
    Call c;
    if (cufftResult r = enter(&c); r != CUFFT_SUCCESS) return r;
    const uint64_t h = c.shim->mint_handle(kKind);
    cufftHandle out = 0;
    if (!to_int(h, &out)) return CUFFT_ALLOC_FAILED;
    c.route = c.shim->route_handle(h, c.ctx);
    ArgWriter w;
    w.u64(h);
    send_async(c, fw::kCreate, w);
    c.shim->add_handle(h, kKind);
    *handle = out;
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftDestroy(cufftHandle plan) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    if (!c.shim->remove_handle(c.handle, kKind)) return CUFFT_INVALID_PLAN;
    ArgWriter w;
    w.u64(c.handle);
    send_async(c, fw::kDestroy, w);
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    uint64_t s = 0;
    if (::rgpu::shim::stream_handle(c.shim, reinterpret_cast<CUstream>(stream), &s) != CUDA_SUCCESS) {
      return CUFFT_INVALID_VALUE;
    }
    ArgWriter w;
    w.u64(c.handle);
    w.u64(s);
    send_async(c, fw::kSetStream, w);
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    w.u64(c.handle);
    w.scalar(static_cast<int32_t>(autoAllocate));
    send_async(c, fw::kSetAutoAllocation, w);
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea) {
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    w.u64(c.handle);
    w.u64(reinterpret_cast<uintptr_t>(workArea));
    send_async(c, fw::kSetWorkArea, w);
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftGetSize(cufftHandle plan, size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  return guarded([&] {
    Call c;
    if (cufftResult r = enter_plan(plan, &c); r != CUFFT_SUCCESS) return r;
    ArgWriter w;
    w.u64(c.handle);
    return send_for_size(c, fw::kGetSize, w, workSize);
  });
}

RGPU_EXPORT cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long* n, long long* inembed,
                                            long long istride, long long idist, cudaDataType inputtype,
                                            long long* onembed, long long ostride, long long odist,
                                            cudaDataType outputtype, long long batch, size_t* workSize,
                                            cudaDataType executiontype) {
  fw::Geometry g;
  if (cufftResult r = geometry<long long>(rank, n, inembed, istride, idist, onembed, ostride, odist, inputtype,
                                          outputtype, executiontype, batch, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  return make(plan, g, workSize);
}

RGPU_EXPORT cufftResult cufftXtGetSizeMany(cufftHandle, int rank, long long* n, long long* inembed,
                                           long long istride, long long idist, cudaDataType inputtype,
                                           long long* onembed, long long ostride, long long odist,
                                           cudaDataType outputtype, long long batch, size_t* workSize,
                                           cudaDataType executiontype) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  fw::Geometry g;
  if (cufftResult r = geometry<long long>(rank, n, inembed, istride, idist, onembed, ostride, odist, inputtype,
                                          outputtype, executiontype, batch, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  return estimate(g, workSize);
}

RGPU_EXPORT cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction) {
  return exec(plan, input, output, direction);
}

// --- the classic API ------------------------------------------------------

RGPU_EXPORT cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long* n, long long* inembed,
                                            long long istride, long long idist, long long* onembed,
                                            long long ostride, long long odist, cufftType type, long long batch,
                                            size_t* workSize) {
  fw::Geometry g;
  if (cufftResult r = classic<long long>(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  return make(plan, g, workSize);
}

RGPU_EXPORT cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride, int idist,
                                          int* onembed, int ostride, int odist, cufftType type, int batch,
                                          size_t* workSize) {
  fw::Geometry g;
  if (cufftResult r = classic<int>(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  return make(plan, g, workSize);
}

RGPU_EXPORT cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch, size_t* workSize) {
  cufftResult r;
  fw::Geometry g = shape(1, nx, 0, 0, type, batch, &r);
  return r != CUFFT_SUCCESS ? r : make(plan, g, workSize);
}
RGPU_EXPORT cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type, size_t* workSize) {
  cufftResult r;
  fw::Geometry g = shape(2, nx, ny, 0, type, 1, &r);
  return r != CUFFT_SUCCESS ? r : make(plan, g, workSize);
}
RGPU_EXPORT cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type, size_t* workSize) {
  cufftResult r;
  fw::Geometry g = shape(3, nx, ny, nz, type, 1, &r);
  return r != CUFFT_SUCCESS ? r : make(plan, g, workSize);
}

namespace {
// cufftPlan*: a handle and its plan in one call; the handle is destroyed
// again when the plan cannot be made.
cufftResult create_and_make(cufftHandle* plan, const fw::Geometry& g, cufftResult shaped) {
  if (!plan) return CUFFT_INVALID_VALUE;
  if (shaped != CUFFT_SUCCESS) return shaped;
  cufftHandle h = 0;
  if (cufftResult r = cufftCreate(&h); r != CUFFT_SUCCESS) return r;
  if (cufftResult r = make(h, g, nullptr); r != CUFFT_SUCCESS) {
    cufftDestroy(h);
    return r;
  }
  *plan = h;
  return CUFFT_SUCCESS;
}
}  // namespace

RGPU_EXPORT cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch) {
  cufftResult r;
  fw::Geometry g = shape(1, nx, 0, 0, type, batch, &r);
  return create_and_make(plan, g, r);
}
RGPU_EXPORT cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  cufftResult r;
  fw::Geometry g = shape(2, nx, ny, 0, type, 1, &r);
  return create_and_make(plan, g, r);
}
RGPU_EXPORT cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type) {
  cufftResult r;
  fw::Geometry g = shape(3, nx, ny, nz, type, 1, &r);
  return create_and_make(plan, g, r);
}
RGPU_EXPORT cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride, int idist,
                                      int* onembed, int ostride, int odist, cufftType type, int batch) {
  fw::Geometry g;
  cufftResult r = classic<int>(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, &g);
  return create_and_make(plan, g, r);
}

// Sizes without a plan: rgpud asks its library with a plan of its own.
RGPU_EXPORT cufftResult cufftEstimate1d(int nx, cufftType type, int batch, size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  cufftResult r;
  fw::Geometry g = shape(1, nx, 0, 0, type, batch, &r);
  return r != CUFFT_SUCCESS ? r : estimate(g, workSize);
}
RGPU_EXPORT cufftResult cufftEstimate2d(int nx, int ny, cufftType type, size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  cufftResult r;
  fw::Geometry g = shape(2, nx, ny, 0, type, 1, &r);
  return r != CUFFT_SUCCESS ? r : estimate(g, workSize);
}
RGPU_EXPORT cufftResult cufftEstimate3d(int nx, int ny, int nz, cufftType type, size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  cufftResult r;
  fw::Geometry g = shape(3, nx, ny, nz, type, 1, &r);
  return r != CUFFT_SUCCESS ? r : estimate(g, workSize);
}
RGPU_EXPORT cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist, int* onembed,
                                          int ostride, int odist, cufftType type, int batch, size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  fw::Geometry g;
  cufftResult r = classic<int>(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, &g);
  return r != CUFFT_SUCCESS ? r : estimate(g, workSize);
}
RGPU_EXPORT cufftResult cufftGetSize1d(cufftHandle, int nx, cufftType type, int batch, size_t* workSize) {
  return cufftEstimate1d(nx, type, batch, workSize);
}
RGPU_EXPORT cufftResult cufftGetSize2d(cufftHandle, int nx, int ny, cufftType type, size_t* workSize) {
  return cufftEstimate2d(nx, ny, type, workSize);
}
RGPU_EXPORT cufftResult cufftGetSize3d(cufftHandle, int nx, int ny, int nz, cufftType type, size_t* workSize) {
  return cufftEstimate3d(nx, ny, nz, type, workSize);
}
RGPU_EXPORT cufftResult cufftGetSizeMany(cufftHandle, int rank, int* n, int* inembed, int istride, int idist,
                                         int* onembed, int ostride, int odist, cufftType type, int batch,
                                         size_t* workArea) {
  return cufftEstimateMany(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workArea);
}
RGPU_EXPORT cufftResult cufftGetSizeMany64(cufftHandle, int rank, long long* n, long long* inembed,
                                           long long istride, long long idist, long long* onembed,
                                           long long ostride, long long odist, cufftType type, long long batch,
                                           size_t* workSize) {
  if (!workSize) return CUFFT_INVALID_VALUE;
  fw::Geometry g;
  cufftResult r = classic<long long>(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, &g);
  return r != CUFFT_SUCCESS ? r : estimate(g, workSize);
}

RGPU_EXPORT cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata, int direction) {
  if (direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  return exec(plan, idata, odata, direction);
}
RGPU_EXPORT cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleComplex* odata,
                                     int direction) {
  if (direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  return exec(plan, idata, odata, direction);
}
RGPU_EXPORT cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return exec(plan, idata, odata, CUFFT_FORWARD);
}
RGPU_EXPORT cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata, cufftDoubleComplex* odata) {
  return exec(plan, idata, odata, CUFFT_FORWARD);
}
RGPU_EXPORT cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return exec(plan, idata, odata, CUFFT_INVERSE);
}
RGPU_EXPORT cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleReal* odata) {
  return exec(plan, idata, odata, CUFFT_INVERSE);
}

// The version of the headers rgpu was built with, as cuFFT answers from its
// own (the generated cufftGetVersion asks rgpud's library).
RGPU_EXPORT cufftResult cufftGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUFFT_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUFFT_VER_MAJOR; return CUFFT_SUCCESS;
    case MINOR_VERSION: *value = CUFFT_VER_MINOR; return CUFFT_SUCCESS;
    case PATCH_LEVEL: *value = CUFFT_VER_PATCH; return CUFFT_SUCCESS;
  }
  return CUFFT_INVALID_VALUE;
}
