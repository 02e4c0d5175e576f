// CUresult names and descriptions, from the generated table of cuda.h's
// values: for cuGetErrorName/cuGetErrorString and the client's messages.
#pragma once

#include <cuda.h>

namespace rgpu::shim {

// "CUDA_ERROR_INVALID_VALUE" and "invalid argument"; null for a value
// cuda.h does not define. Immutable data: any thread, any time.
const char* driver_error_name(CUresult value) noexcept;
const char* driver_error_description(CUresult value) noexcept;

}  // namespace rgpu::shim
