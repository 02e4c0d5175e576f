// Names and descriptions of CUresult values.
#pragma once

#include "cuda_api.h"

namespace rgpu::cpudev {

// "CUDA_ERROR_INVALID_VALUE" etc.; null for a value cuda.h does not define.
const char* error_name(CUresult r);
// A short description; null for a value cuda.h does not define.
const char* error_string(CUresult r);

}  // namespace rgpu::cpudev
