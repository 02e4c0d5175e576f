// Names and descriptions of CUresult values, and the reason of the calling
// thread's last refusal (rgpuTakeErrorReason).
#pragma once

#include <string>

#include "cuda_api.h"

namespace rgpu::cpudev {

// "CUDA_ERROR_INVALID_VALUE" etc.; null for a value cuda.h does not define.
const char* error_name(CUresult r);
// A short description; null for a value cuda.h does not define.
const char* error_string(CUresult r);

// Records why the calling thread's current API call returns `code` (a
// kernel the device cannot run, a module it cannot load), for a server to
// pass on with the error (rgpuTakeErrorReason). Every entry point that
// resolves the driver (enter()) starts with none.
void note_reason(CUresult code, std::string text);
void clear_reason();

}  // namespace rgpu::cpudev
