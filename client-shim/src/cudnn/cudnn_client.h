// What the hand-written cuDNN entry points share: entering a call, sending
// a hand-written call (rgpu/protocol/cudnn_wire.h's ordinals) one-way or
// with a round trip, and the library's status of a reply.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "../library_calls.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::shim::cudnn {

// The calling thread's context and the process state; false when there is
// no server or device (the entry point answers CUDNN_STATUS_EXECUTION_FAILED).
inline bool enter(Shim** shim, uint64_t* ctx) { return library_enter(shim, ctx); }

// One-way: an error surfaces at the next synchronizing call.
void send_async(Shim* shim, uint64_t ctx, uint32_t function, const protocol::ArgWriter& args);

// A round trip; the reply's packed out-arguments in *reply. The library's
// status (a refusal's code, or CUDNN_STATUS_EXECUTION_FAILED for another
// API's error or a lost connection).
cudnnStatus_t send_sync(Shim* shim, uint64_t ctx, uint32_t function, const protocol::ArgWriter& args,
                        std::vector<std::byte>* reply);

// The wire value of a client-minted library handle.
inline uint64_t wire_handle(const void* h) { return reinterpret_cast<uintptr_t>(h); }

}  // namespace rgpu::shim::cudnn
