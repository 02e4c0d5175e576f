// The hand-written rows of cuSPARSE (api/cusparse.api's hand
// lines): SpMM, SpMV, SDDMM (and its preprocess) and their buffer sizes,
// each with its descriptors
// inside. Ordinals: rgpu/protocol/cusparse_wire.h.
#pragma once

#include <cstdint>

#include "dispatch.h"

namespace rgpu::server {

// The row of hand-written cuSPARSE call `function`, or null.
const DispatchRow* find_cusparse_hand_row(uint32_t function);

}  // namespace rgpu::server
