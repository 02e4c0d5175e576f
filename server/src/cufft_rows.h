// The hand-written rows of cuFFT (api/cufft.api's hand lines):
// plans, their settings, their sizes and their execution. Ordinals:
// rgpu/protocol/cufft_wire.h.
#pragma once

#include <cstdint>

#include "dispatch.h"

namespace rgpu::server {

// The row of hand-written cuFFT call `function`, or null.
const DispatchRow* find_cufft_hand_row(uint32_t function);

}  // namespace rgpu::server
