// The client's hooks of generated driver calls (`after=` in api/driver.api):
// where the client itself must act once the server answered. A hook runs
// after the call succeeded on its server, on the calling thread, with the
// route and the wire values of the handles the call names; its result is
// the call's.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "shim.h"

namespace rgpu::shim::hooks {

// cuEventQuery: complete on the device is not yet complete here while async
// device-to-host copies are still on their way (cuEventSynchronize waits for
// them; a query must not report done before they land).
CUresult event_query_done(const Route& route, uint64_t event);

// cuStreamQuery: the same for the copies of that stream (of every stream,
// for the legacy stream).
CUresult stream_query_done(const Route& route, uint64_t stream);

}  // namespace rgpu::shim::hooks
