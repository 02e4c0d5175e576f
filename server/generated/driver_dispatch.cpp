// Placeholder until the generator writes this file from the driver's API
// description: no generated rows yet, so every Call.invoke is "not supported".
#include "dispatch.h"

namespace rgpu::server {

const DispatchRow* find_row(wire::Api, uint32_t) { return nullptr; }

}  // namespace rgpu::server
