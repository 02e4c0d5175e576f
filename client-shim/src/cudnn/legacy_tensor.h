// The client's legacy tensor descriptor (cudnnTensorStruct, opaque in
// NVIDIA's headers), shared by the calls that read or set one.
#pragma once

#include <cudnn.h>

#include "rgpu/protocol/cudnn_wire.h"

struct cudnnTensorStruct {
  static constexpr uint32_t kMagic = 0x74636e64;
  uint32_t magic = kMagic;
  bool set = false;
  rgpu::protocol::cudnn::LegacyTensor t;
};

namespace rgpu::shim::cudnn {

// The descriptor's tensor, or null when `d` is no set tensor descriptor.
const protocol::cudnn::LegacyTensor* tensor(cudnnTensorDescriptor_t d);
// cudnnSetTensorNdDescriptor's checks and effect.
cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nd, const int* dims,
                         const int* strides);

}  // namespace rgpu::shim::cudnn
