// The legacy tensor descriptor (cudnnTensorStruct, opaque in NVIDIA's
// headers): what cudnnSetTensorNdDescriptor set.
#pragma once

#include <cudnn.h>

#include "layout.h"

struct cudnnTensorStruct {
  static constexpr uint32_t kMagic = 0x74646e6e;
  uint32_t magic = kMagic;
  bool set = false;
  rgpu::cpudnn::Strided t;
};

namespace rgpu::cpudnn {

inline const Strided* strided(cudnnTensorDescriptor_t d) {
  return d && d->magic == cudnnTensorStruct::kMagic && d->set ? &d->t : nullptr;
}

}  // namespace rgpu::cpudnn
