// cuFFT's entry points the stand-in implements: plan handles, their
// settings, cufftXtMakePlanMany, its sizes and cufftXtExec. rgpud maps every
// way a program makes or runs a plan onto these (server/src/cufft_rows.cpp).
// The stand-in needs no device work area: every size it answers is 0.
#include <cufftXt.h>

#include <new>

#include "plan.h"
#include "rgpu/common/log.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace fw = ::rgpu::protocol::cufft;
using rgpu::cpufft::Plan;
using rgpu::cpufft::plans;

namespace rgpu::cpufft {

cufftHandle PlanTable::add(std::shared_ptr<Plan> p) {
  std::lock_guard<std::mutex> lock(mu_);
  while (plans_.count(next_) || next_ <= 0) next_ = next_ <= 0 ? 1 : next_ + 1;
  const cufftHandle h = next_++;
  plans_[h] = std::move(p);
  return h;
}

std::shared_ptr<Plan> PlanTable::find(cufftHandle h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(h);
  return it == plans_.end() ? nullptr : it->second;
}

bool PlanTable::remove(cufftHandle h) {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.erase(h) > 0;
}

PlanTable& plans() {
  static PlanTable table;
  return table;
}

}  // namespace rgpu::cpufft

namespace {

template <class F>
cufftResult guarded(const char* fn, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUFFT_ALLOC_FAILED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu cufft: internal error function=%s error=%s", fn, e.what());
    return CUFFT_INTERNAL_ERROR;
  }
}

// A geometry from cufftXtMakePlanMany's arguments, or the reason it is not one.
cufftResult geometry(int rank, const long long* n, const long long* inembed, long long istride, long long idist,
                     cudaDataType itype, const long long* onembed, long long ostride, long long odist,
                     cudaDataType otype, long long batch, cudaDataType etype, fw::Geometry* g) {
  if (rank < 1 || rank > fw::kMaxRank) return CUFFT_INVALID_SIZE;
  if (!n) return CUFFT_INVALID_VALUE;
  g->rank = rank;
  g->has_inembed = inembed && onembed;
  g->has_onembed = inembed && onembed;
  for (int i = 0; i < rank; ++i) {
    g->n[i] = n[i];
    if (g->n[i] < 1) return CUFFT_INVALID_SIZE;
    if (g->has_inembed) {
      g->inembed[i] = inembed[i];
      g->onembed[i] = onembed[i];
    }
  }
  g->istride = istride;
  g->idist = idist;
  g->ostride = ostride;
  g->odist = odist;
  g->itype = itype;
  g->otype = otype;
  g->etype = etype;
  g->batch = batch;
  if (fw::kind_of(*g) == fw::Kind::kNone) return CUFFT_INVALID_TYPE;
  if (const char* why = fw::check(*g)) {
    RGPU_WARN("cpu cufft: plan refused why=\"%s\"", why);
    return CUFFT_INVALID_VALUE;
  }
  // FFTW takes sizes, embeds and strides as int.
  for (int i = 0; i < rank; ++i) {
    if (g->n[i] > INT32_MAX || g->inembed[i] > INT32_MAX || g->onembed[i] > INT32_MAX) return CUFFT_INVALID_SIZE;
  }
  if (batch > INT32_MAX || istride > INT32_MAX || idist > INT32_MAX || ostride > INT32_MAX || odist > INT32_MAX) {
    return CUFFT_INVALID_SIZE;
  }
  return CUFFT_SUCCESS;
}

}  // namespace

RGPU_EXPORT cufftResult cufftCreate(cufftHandle* handle) {
  if (!handle) return CUFFT_INVALID_VALUE;
  return guarded("cufftCreate", [&] {
    auto p = std::make_shared<Plan>();
    if (cuCtxGetCurrent(&p->ctx) != CUDA_SUCCESS || !p->ctx) return CUFFT_SETUP_FAILED;
    *handle = plans().add(std::move(p));
    return CUFFT_SUCCESS;
  });
}

RGPU_EXPORT cufftResult cufftDestroy(cufftHandle plan) {
  return plans().remove(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

RGPU_EXPORT cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  auto p = plans().find(plan);
  if (!p) return CUFFT_INVALID_PLAN;
  p->stream = reinterpret_cast<CUstream>(stream);
  return CUFFT_SUCCESS;
}

RGPU_EXPORT cufftResult cufftSetAutoAllocation(cufftHandle plan, int) {
  return plans().find(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

RGPU_EXPORT cufftResult cufftSetWorkArea(cufftHandle plan, void*) {
  return plans().find(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

RGPU_EXPORT cufftResult cufftGetSize(cufftHandle plan, size_t* workSize) {
  if (!plans().find(plan)) return CUFFT_INVALID_PLAN;
  if (!workSize) return CUFFT_INVALID_VALUE;
  *workSize = 0;
  return CUFFT_SUCCESS;
}

RGPU_EXPORT cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long* n, long long* inembed,
                                            long long istride, long long idist, cudaDataType inputtype,
                                            long long* onembed, long long ostride, long long odist,
                                            cudaDataType outputtype, long long batch, size_t* workSize,
                                            cudaDataType executiontype) {
  auto p = plans().find(plan);
  if (!p) return CUFFT_INVALID_PLAN;
  if (p->made) return CUFFT_INVALID_PLAN;
  fw::Geometry g;
  if (cufftResult r = geometry(rank, n, inembed, istride, idist, inputtype, onembed, ostride, odist, outputtype, batch,
                               executiontype, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  p->geometry = g;
  p->made = true;
  if (workSize) *workSize = 0;
  return CUFFT_SUCCESS;
}

RGPU_EXPORT cufftResult cufftXtGetSizeMany(cufftHandle, int rank, long long* n, long long* inembed,
                                           long long istride, long long idist, cudaDataType inputtype,
                                           long long* onembed, long long ostride, long long odist,
                                           cudaDataType outputtype, long long batch, size_t* workSize,
                                           cudaDataType executiontype) {
  fw::Geometry g;
  if (cufftResult r = geometry(rank, n, inembed, istride, idist, inputtype, onembed, ostride, odist, outputtype, batch,
                               executiontype, &g);
      r != CUFFT_SUCCESS) {
    return r;
  }
  if (workSize) *workSize = 0;
  return CUFFT_SUCCESS;
}

RGPU_EXPORT cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction) {
  auto p = plans().find(plan);
  if (!p) return CUFFT_INVALID_PLAN;
  if (!p->made) return CUFFT_INVALID_PLAN;
  return guarded("cufftXtExec", [&] {
    return rgpu::cpufft::execute(*p, reinterpret_cast<CUdeviceptr>(input), reinterpret_cast<CUdeviceptr>(output),
                                 direction);
  });
}

RGPU_EXPORT cufftResult cufftGetVersion(int* version) {
  if (!version) return CUFFT_INVALID_VALUE;
  *version = CUFFT_VERSION;
  return CUFFT_SUCCESS;
}

RGPU_EXPORT cufftResult cufftGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUFFT_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUFFT_VER_MAJOR; return CUFFT_SUCCESS;
    case MINOR_VERSION: *value = CUFFT_VER_MINOR; return CUFFT_SUCCESS;
    case PATCH_LEVEL: *value = CUFFT_VER_PATCH; return CUFFT_SUCCESS;
  }
  return CUFFT_INVALID_VALUE;
}
