// The device description (rgpu/protocol/device.h) through the wire and back.
#include "rgpu/protocol/device.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

namespace rgpu::protocol {
namespace {

TEST(DeviceDescription, RoundTripsThroughTheWire) {
  DeviceDescription d;
  d.name = "rgpu CPU device 0 (slice 1)";
  for (int i = 0; i < 16; ++i) d.uuid.bytes[i] = static_cast<char>(0xa0 + i);
  d.total_mem = 3ull << 30;
  d.attributes = {1024, 0, -5, 2147483647};
  d.attribute_missing = {false, true, false, false};
  d.ptx_only = true;
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<wire::DeviceInfo>();
  write_device(d, out);
  const DeviceDescription back = read_device(out.asReader());
  EXPECT_EQ(back.name, d.name);
  EXPECT_EQ(0, memcmp(back.uuid.bytes, d.uuid.bytes, 16));
  EXPECT_EQ(back.total_mem, d.total_mem);
  EXPECT_EQ(back.attributes, d.attributes);
  EXPECT_EQ(back.attribute_missing, d.attribute_missing);
  EXPECT_TRUE(back.ptx_only);
}

TEST(DeviceDescription, AShortOrLongUuidIsCutOrPadded) {
  for (size_t n : {0u, 3u, 40u}) {
    capnp::MallocMessageBuilder message;
    auto out = message.initRoot<wire::DeviceInfo>();
    std::vector<capnp::byte> bytes(n, 0x7f);
    out.setUuid(kj::arrayPtr(bytes.data(), bytes.size()));
    const DeviceDescription back = read_device(out.asReader());
    for (size_t i = 0; i < 16; ++i) EXPECT_EQ(back.uuid.bytes[i], i < n ? 0x7f : 0) << n << " " << i;
  }
}

}  // namespace
}  // namespace rgpu::protocol
