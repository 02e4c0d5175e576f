// Hand-written checks of cuSOLVER calls (check= in api/cusolver.api)
// for what the generated ones cannot see: getrf takes a workspace without
// stating its size, so rgpud asks the server's library how much it uses.
#pragma once

#include <cusolverDn.h>

#include "call_env.h"
#include "dispatch.h"

namespace rgpu::server {

// Whether `Workspace` holds what getrf will use for this matrix (the
// server's getrf_bufferSize, in elements): refused with
// CUSOLVER_STATUS_INVALID_VALUE when it is not memory of the calling context
// for that many bytes, or when the library cannot say.
InvokeOutcome cusolver_getrf_workspace(const CallEnv& env, wire::Api api, cusolverDnHandle_t handle, int m, int n,
                                       float* A, int lda, float* Workspace);
InvokeOutcome cusolver_getrf_workspace(const CallEnv& env, wire::Api api, cusolverDnHandle_t handle, int m, int n,
                                       double* A, int lda, double* Workspace);

}  // namespace rgpu::server
