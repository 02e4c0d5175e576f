// The shared steps of the libraries' generated entry points.
#include "library_calls.h"

#include "rgpu/common/log.h"
#include "runtime/runtime.h"

namespace rgpu::shim {

bool library_enter(Shim** shim, uint64_t* ctx) {
  if (runtime::ensure_context() != cudaSuccess) return false;
  CUresult error = CUDA_SUCCESS;
  *shim = shim_or_error(&error);
  if (*shim == nullptr) return false;
  *ctx = current_context();
  return *ctx != 0;
}

uint32_t library_status(const SyncResult& r, wire::Api api, uint32_t failed) {
  if (r.code == 0) return 0;
  if (r.api == api) return r.code;
  RGPU_DEBUG("library call answered by another api api=%u code=%u mapped=%u", static_cast<unsigned>(r.api), r.code,
             failed);
  return failed;
}

}  // namespace rgpu::shim
