// What the generated entry points of the CUDA libraries (cuBLAS, ...;
// client-shim/generated/<library>_calls.cpp) share: entering a call the way
// NVIDIA's libraries do (through the runtime's current context), and mapping
// a reply to the library's own status.
#pragma once

#include <cstdint>

#include "api_common.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::shim {

// Makes sure the calling thread has the runtime's context (initialising the
// runtime on first use, as a library linked to cudart does) and gives the
// process state and that context's handle. False when there is none (no
// server, no device): the caller answers its library's failure status.
bool library_enter(Shim** shim, uint64_t* ctx);

// The library status a sync call answers: the reply's code when it is this
// API's (`api`), success as success, and `failed` for anything else (the
// driver's or the session's refusal, a lost connection, an earlier async
// error of another API).
uint32_t library_status(const SyncResult& r, wire::Api api, uint32_t failed);

}  // namespace rgpu::shim
