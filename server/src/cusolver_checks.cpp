// cuSOLVER's hand-written checks: see cusolver_checks.h.
#include "cusolver_checks.h"

#include <cstdint>

#include "library_tables.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::server {

namespace {

template <class T, class F>
InvokeOutcome getrf_workspace(const CallEnv& env, wire::Api api, F size_fn, cusolverDnHandle_t handle, int m, int n,
                              T* A, int lda, T* Workspace) {
  int lwork = 0;
  if (!size_fn || size_fn(handle, m, n, A, lda, &lwork) != CUSOLVER_STATUS_SUCCESS || lwork < 0)
    return dispatch::refuse(api, CUSOLVER_STATUS_INVALID_VALUE, "getrf: the library cannot size the workspace");
  const uint64_t bytes = rgpu_array_bytes(lwork, sizeof(T));
  const auto addr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(Workspace));
  if (addr == 0 ? bytes != 0 : !env.device_range(addr, bytes))
    return dispatch::refuse(api, CUSOLVER_STATUS_INVALID_VALUE, "getrf: Workspace is smaller than the library uses");
  return {};
}

}  // namespace

InvokeOutcome cusolver_getrf_workspace(const CallEnv& env, wire::Api api, cusolverDnHandle_t handle, int m, int n,
                                       float* A, int lda, float* Workspace) {
  const auto* lib = library_table<CusolverTable>(env);
  return getrf_workspace(env, api, lib ? lib->cusolverDnSgetrf_bufferSize : nullptr, handle, m, n, A, lda, Workspace);
}

InvokeOutcome cusolver_getrf_workspace(const CallEnv& env, wire::Api api, cusolverDnHandle_t handle, int m, int n,
                                       double* A, int lda, double* Workspace) {
  const auto* lib = library_table<CusolverTable>(env);
  return getrf_workspace(env, api, lib ? lib->cusolverDnDgetrf_bufferSize : nullptr, handle, m, n, A, lda, Workspace);
}

}  // namespace rgpu::server
