// The status codes the dispatcher answers by itself. Only the driver API is
// remoted through Call.invoke so far; its codes are what every other API gets
// until its description exists.
#include "dispatch.h"

#include <cuda.h>

namespace rgpu::server {

uint32_t not_supported_code(wire::Api) { return CUDA_ERROR_NOT_SUPPORTED; }
uint32_t invalid_value_code(wire::Api) { return CUDA_ERROR_INVALID_VALUE; }

}  // namespace rgpu::server
