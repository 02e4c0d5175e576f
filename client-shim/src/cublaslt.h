// cuBLASLt's descriptors on the client: rgpu's attribute bags
// (rgpu/protocol/lt_desc.h) behind cuBLASLt's handle types. The generated
// entry points (client-shim/generated/cublasLt_calls.cpp) send them whole.
#pragma once

#include <cublasLt.h>

#include "rgpu/protocol/lt_desc.h"

namespace rgpu::shim {

// The bag behind a descriptor the application got from rgpu's
// cublasLt*Create, or null (NULL, or a descriptor of another kind). Like
// cuBLASLt, a destroyed or forged pointer is not detected beyond that.
const protocol::lt::Desc* lt_desc(cublasLtMatmulDesc_t d);
const protocol::lt::Desc* lt_desc(cublasLtMatrixLayout_t d);
const protocol::lt::Desc* lt_desc(cublasLtMatmulPreference_t d);

}  // namespace rgpu::shim
