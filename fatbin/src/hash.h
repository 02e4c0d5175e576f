// Private: the portable SHA-256 path, exposed so tests can check the
// accelerated one against it.
#pragma once

#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin::detail {

ContentHash content_hash_portable(Bytes data);

}  // namespace rgpu::fatbin::detail
