// One device as a server describes it to its clients: the record rgpud
// fills from its driver, writes into every welcome (the wire's DeviceInfo)
// and the client reads back. One type on both sides, converted to and from
// the wire here only.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rgpu.capnp.h"

namespace rgpu::protocol {

struct DeviceDescription {
  std::string name;
  CUuuid uuid{};
  uint64_t total_mem = 0;
  // attributes[i] is cuDeviceGetAttribute(i); attribute_missing[i] marks one
  // the device does not answer (the client returns CUDA_ERROR_INVALID_VALUE).
  std::vector<int32_t> attributes;
  std::vector<bool> attribute_missing;
  bool ptx_only = false;  // rgpu's CPU device: runs PTX, so a client sends no cubin
};

void write_device(const DeviceDescription& d, wire::DeviceInfo::Builder out);
// A uuid of another length than 16 bytes is cut or zero-padded; lists are
// taken as they come (the client bounds-checks every attribute read).
DeviceDescription read_device(wire::DeviceInfo::Reader in);

}  // namespace rgpu::protocol
