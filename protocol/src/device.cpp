// DeviceDescription to and from the wire (rgpu/protocol/device.h).
#include "rgpu/protocol/device.h"

#include <algorithm>
#include <cstring>

namespace rgpu::protocol {

void write_device(const DeviceDescription& d, wire::DeviceInfo::Builder out) {
  out.setName(d.name);
  out.setUuid(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(d.uuid.bytes), sizeof d.uuid.bytes));
  out.setTotalMem(d.total_mem);
  out.setPtxOnly(d.ptx_only);
  auto attrs = out.initAttributes(static_cast<unsigned>(d.attributes.size()));
  for (size_t a = 0; a < d.attributes.size(); ++a) attrs.set(static_cast<unsigned>(a), d.attributes[a]);
  auto missing = out.initAttributeMissing(static_cast<unsigned>(d.attribute_missing.size()));
  for (size_t a = 0; a < d.attribute_missing.size(); ++a) missing.set(static_cast<unsigned>(a), d.attribute_missing[a]);
}

DeviceDescription read_device(wire::DeviceInfo::Reader in) {
  DeviceDescription d;
  d.name = in.getName();
  auto uuid = in.getUuid();
  std::memcpy(d.uuid.bytes, uuid.begin(), std::min<size_t>(uuid.size(), sizeof d.uuid.bytes));
  d.total_mem = in.getTotalMem();
  d.ptx_only = in.getPtxOnly();
  for (auto a : in.getAttributes()) d.attributes.push_back(a);
  for (auto m : in.getAttributeMissing()) d.attribute_missing.push_back(m);
  return d;
}

}  // namespace rgpu::protocol
