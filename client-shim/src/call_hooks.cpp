// The client's hooks of generated driver calls (call_hooks.h).
#include "call_hooks.h"

#include "client.h"

namespace rgpu::shim::hooks {

CUresult event_query_done(const Route& route) {
  return route.client->copy_outs_pending(Client::kAnyStream) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

}  // namespace rgpu::shim::hooks
