// The hand-written rows of cuFFT (cufft_rows.h). A plan handle maps to a
// FftPlan: the library's plan and the geometry it was made with, so that
// each execution's input and output are checked against the calling
// context's memory for the extents the plan reads and writes (and a work
// area the program supplies for the plan's work size) before the library
// runs.
#include "cufft_rows.h"

#include <cufftXt.h>

#include <new>
#include <span>
#include <string>

#include "library_tables.h"
#include "rgpu/protocol/cufft_wire.h"

namespace rgpu::server {
namespace {

namespace fw = ::rgpu::protocol::cufft;
using ::rgpu::protocol::ArgReader;
using ::rgpu::protocol::ArgWriter;
using ::rgpu::protocol::HandleKind;
using dispatch::refuse;
constexpr auto kApi = wire::Api::CUFFT;
constexpr auto kPlan = static_cast<HandleKind>(fw::kPlanKind);

// One plan of a session. Lifetime: owned by the session's handle table,
// destroyed (with the library's plan) when the handle is removed.
struct FftPlan {
  const CufftTable* table = nullptr;
  cufftHandle lib = 0;
  bool made = false;
  fw::Geometry geometry;
  uint64_t work = 0;        // the library's work size for the plan
  bool auto_allocate = true;
  uint64_t work_area = 0;   // the program's, when it allocates
};

InvokeOutcome code(uint32_t c, const char* fn, const char* what) {
  InvokeOutcome o;
  o.api = kApi;
  o.code = c;
  if (c != 0) o.message = std::string(fn) + ": " + what;
  return o;
}
InvokeOutcome bad(const char* fn, const std::string& what) {
  return refuse(kApi, CUFFT_INVALID_VALUE, std::string(fn) + ": " + what);
}

const CufftTable* table(CallEnv& env) { return library_table<CufftTable>(env); }

FftPlan* plan_of(CallEnv& env, uint64_t h) { return static_cast<FftPlan*>(env.find(kPlan, h)); }

// The geometry as cufftXtMakePlanMany and cufftXtGetSizeMany take it.
struct XtArgs {
  long long n[fw::kMaxRank] = {}, inembed[fw::kMaxRank] = {}, onembed[fw::kMaxRank] = {};
  explicit XtArgs(const fw::Geometry& g) {
    for (int i = 0; i < fw::kMaxRank; ++i) {
      n[i] = g.n[i];
      inembed[i] = g.inembed[i];
      onembed[i] = g.onembed[i];
    }
  }
};

template <class Fn>
cufftResult call_xt(Fn fn, cufftHandle plan, const fw::Geometry& g, size_t* work) {
  XtArgs a(g);
  return fn(plan, g.rank, a.n, g.has_inembed ? a.inembed : nullptr, g.istride, g.idist,
            static_cast<cudaDataType>(g.itype), g.has_onembed ? a.onembed : nullptr, g.ostride, g.odist,
            static_cast<cudaDataType>(g.otype), g.batch, work, static_cast<cudaDataType>(g.etype));
}

InvokeOutcome run_create(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftCreate";
  ArgReader rd(args);
  uint64_t h = 0;
  rd.u64(&h);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!protocol::is_minted(h) || protocol::kind_of(h) != kPlan) return bad(fn, "plan is no fresh handle");
  const CufftTable* t = table(env);
  if (!t) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufft: not on this server");
  if (!t->cufftCreate || !t->cufftDestroy) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftCreate: not in this server's library");
  auto* p = new (std::nothrow) FftPlan();
  if (!p) return refuse(kApi, CUFFT_ALLOC_FAILED, "cufftCreate: out of host memory");
  p->table = t;
  if (cufftResult r = t->cufftCreate(&p->lib); r != CUFFT_SUCCESS) {
    delete p;
    return code(r, fn, "the library refused");
  }
  if (!env.add(kPlan, h, p, 0, [](void* o) {
        auto* q = static_cast<FftPlan*>(o);
        q->table->cufftDestroy(q->lib);
        delete q;
      })) {
    t->cufftDestroy(p->lib);
    delete p;
    return bad(fn, "plan not accepted");
  }
  return code(0, fn, "");
}

InvokeOutcome run_destroy(CallEnv& env, std::span<const std::byte> args) {
  ArgReader rd(args);
  uint64_t h = 0;
  rd.u64(&h);
  if (!rd.finish()) return bad("cufftDestroy", "undecodable arguments");
  if (!env.remove(kPlan, h)) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftDestroy: plan is not a live plan");
  return code(0, "", "");
}

InvokeOutcome run_set_stream(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftSetStream";
  ArgReader rd(args);
  uint64_t h = 0, sh = 0;
  rd.u64(&h);
  rd.u64(&sh);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftSetStream: plan is not a live plan");
  CUstream s = nullptr;
  if (!env.stream(sh, &s)) return bad(fn, "stream is not a stream of this context");
  if (!p->table->cufftSetStream) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftSetStream: not in this server's library");
  return code(p->table->cufftSetStream(p->lib, reinterpret_cast<cudaStream_t>(s)), fn, "the library refused");
}

InvokeOutcome run_set_auto_allocation(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftSetAutoAllocation";
  ArgReader rd(args);
  uint64_t h = 0;
  int32_t on = 0;
  rd.u64(&h);
  rd.scalar(&on);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftSetAutoAllocation: plan is not a live plan");
  if (!p->table->cufftSetAutoAllocation) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftSetAutoAllocation: not in this server's library");
  cufftResult r = p->table->cufftSetAutoAllocation(p->lib, on);
  if (r == CUFFT_SUCCESS) p->auto_allocate = on != 0;
  return code(r, fn, "the library refused");
}

// The work area is checked for the plan's work size when the plan runs
// (the program may set it before the plan is made, or free it later).
InvokeOutcome run_set_work_area(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftSetWorkArea";
  ArgReader rd(args);
  uint64_t h = 0, area = 0;
  rd.u64(&h);
  rd.u64(&area);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftSetWorkArea: plan is not a live plan");
  if (area != 0 && !env.device_range(area, p->made ? p->work : 0)) return bad(fn, "work area is not memory of this context");
  if (!p->table->cufftSetWorkArea) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftSetWorkArea: not in this server's library");
  cufftResult r = p->table->cufftSetWorkArea(p->lib, reinterpret_cast<void*>(static_cast<uintptr_t>(area)));
  if (r == CUFFT_SUCCESS) p->work_area = area;
  return code(r, fn, "the library refused");
}

InvokeOutcome work_reply(cufftResult r, const char* fn, uint64_t work) {
  InvokeOutcome o = code(r, fn, "the library refused");
  if (r != CUFFT_SUCCESS) return o;
  ArgWriter w;
  w.u64(work);
  o.out = w.take();
  return o;
}

InvokeOutcome run_make_plan(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftXtMakePlanMany";
  ArgReader rd(args);
  uint64_t h = 0;
  fw::Geometry g;
  rd.u64(&h);
  fw::read_geometry(rd, &g);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftXtMakePlanMany: plan is not a live plan");
  if (p->made) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftXtMakePlanMany: plan already made");
  if (const char* why = fw::check(g)) return refuse(kApi, CUFFT_INVALID_VALUE, std::string(fn) + ": " + why);
  if (!p->table->cufftXtMakePlanMany) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftXtMakePlanMany: not in this server's library");
  size_t work = 0;
  cufftResult r = call_xt(p->table->cufftXtMakePlanMany, p->lib, g, &work);
  if (r == CUFFT_SUCCESS) {
    p->made = true;
    p->geometry = g;
    p->work = work;
  }
  return work_reply(r, fn, work);
}

InvokeOutcome run_estimate(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftXtGetSizeMany";
  ArgReader rd(args);
  fw::Geometry g;
  fw::read_geometry(rd, &g);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (const char* why = fw::check(g)) return refuse(kApi, CUFFT_INVALID_VALUE, std::string(fn) + ": " + why);
  const CufftTable* t = table(env);
  if (!t) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufft: not on this server");
  if (!t->cufftCreate || !t->cufftDestroy || !t->cufftXtGetSizeMany) {
    return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftXtGetSizeMany: not in this server's library");
  }
  cufftHandle tmp = 0;
  if (cufftResult r = t->cufftCreate(&tmp); r != CUFFT_SUCCESS) return code(r, fn, "no plan to size with");
  size_t work = 0;
  cufftResult r = call_xt(t->cufftXtGetSizeMany, tmp, g, &work);
  t->cufftDestroy(tmp);
  return work_reply(r, fn, work);
}

InvokeOutcome run_get_size(CallEnv& env, std::span<const std::byte> args) {
  ArgReader rd(args);
  uint64_t h = 0;
  rd.u64(&h);
  if (!rd.finish()) return bad("cufftGetSize", "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftGetSize: plan is not a live plan");
  return work_reply(CUFFT_SUCCESS, "cufftGetSize", p->work);
}

InvokeOutcome run_exec(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cufftXtExec";
  ArgReader rd(args);
  uint64_t h = 0, in = 0, out = 0;
  int32_t direction = 0;
  rd.u64(&h);
  rd.u64(&in);
  rd.u64(&out);
  rd.scalar(&direction);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  FftPlan* p = plan_of(env, h);
  if (!p) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftXtExec: plan is not a live plan");
  if (!p->made) return refuse(kApi, CUFFT_INVALID_PLAN, "cufftXtExec: plan not made");
  const fw::Geometry& g = p->geometry;
  if (fw::kind_of(g) == fw::Kind::kC2C && direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) {
    return bad(fn, "direction is neither forward nor inverse");
  }
  const bool in_place = in == out;
  if (!env.device_range(in, fw::extent_bytes(g, true, in_place))) {
    return bad(fn, "input is not memory of this context for the plan's extent");
  }
  if (!env.device_range(out, fw::extent_bytes(g, false, in_place))) {
    return bad(fn, "output is not memory of this context for the plan's extent");
  }
  if (!p->auto_allocate && p->work > 0 && !env.device_range(p->work_area, p->work)) {
    return bad(fn, "work area is not memory of this context for the plan's work size");
  }
  if (!p->table->cufftXtExec) return refuse(kApi, CUFFT_NOT_SUPPORTED, "cufftXtExec: not in this server's library");
  return code(p->table->cufftXtExec(p->lib, reinterpret_cast<void*>(static_cast<uintptr_t>(in)),
                                    reinterpret_cast<void*>(static_cast<uintptr_t>(out)), direction),
              fn, "the library refused");
}

const DispatchRow kRows[] = {
    {"cufftCreate", kApi, fw::kCreate, false, false, &run_create},
    {"cufftDestroy", kApi, fw::kDestroy, false, false, &run_destroy},
    {"cufftSetStream", kApi, fw::kSetStream, false, false, &run_set_stream},
    {"cufftSetAutoAllocation", kApi, fw::kSetAutoAllocation, false, false, &run_set_auto_allocation},
    {"cufftSetWorkArea", kApi, fw::kSetWorkArea, false, false, &run_set_work_area},
    {"cufftXtMakePlanMany", kApi, fw::kMakePlan, true, false, &run_make_plan},
    {"cufftXtGetSizeMany", kApi, fw::kEstimate, true, false, &run_estimate},
    {"cufftGetSize", kApi, fw::kGetSize, true, false, &run_get_size},
    {"cufftXtExec", kApi, fw::kExec, false, false, &run_exec},
};

}  // namespace

const DispatchRow* find_cufft_hand_row(uint32_t function) {
  if (function <= fw::kFirstHandFn || function > fw::kLastHandFn) return nullptr;
  return &kRows[function - fw::kFirstHandFn - 1];
}

}  // namespace rgpu::server
