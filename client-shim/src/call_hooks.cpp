// The client's hooks of generated driver calls (call_hooks.h).
#include "call_hooks.h"

#include "api_common.h"
#include "client.h"

namespace rgpu::shim::hooks {

CUresult event_query_done(const Route& route, uint64_t) {
  return route.client->copy_outs_pending(Client::kAnyStream) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult stream_query_done(const Route& route, uint64_t stream) {
  return route.client->copy_outs_pending(copy_out_scope(stream)) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

}  // namespace rgpu::shim::hooks
