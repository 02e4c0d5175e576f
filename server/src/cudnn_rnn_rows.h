// The hand-written rows of cuDNN's recurrent networks: dropout state size
// and seeding, the RNN size and weight-layout queries, forward, backward
// data and backward weights (ordinals: rgpu/protocol/cudnn_wire.h). Every
// descriptor is bounded by its decoder, checked against the others of its
// call, and every operand against the context's memory for the extent the
// descriptors (and the library's own size queries) give, before the
// library sees anything.
#pragma once

#include <cstdint>

#include "dispatch.h"

namespace rgpu::server {

// The row of RNN call `function`, or null.
const DispatchRow* find_cudnn_rnn_row(uint32_t function);

}  // namespace rgpu::server
