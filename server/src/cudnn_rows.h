// The hand-written rows of cuDNN (api/cudnn.api's hand lines
// that reach rgpud): engine heuristics, an operation graph's engine count,
// execution plans (create, execute, destroy), batch norm and its sizes, and
// the library's version. Ordinals: rgpu/protocol/cudnn_wire.h.
#pragma once

#include <cstdint>

#include "dispatch.h"

namespace rgpu::server {

// The row of hand-written cuDNN call `function` (the RNN rows of
// cudnn_rnn_rows.h included), or null.
const DispatchRow* find_cudnn_hand_row(uint32_t function);

}  // namespace rgpu::server
