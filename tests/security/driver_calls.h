// Event and stream calls as the client sends them: generated driver calls
// (Call.invoke) packed by the generated pack functions (api/driver.api), for
// tests and fuzz seeds that speak the wire directly.
#pragma once

#include <cstdint>
#include <functional>

#include "driver_pack.h"
#include "rgpu.capnp.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/codec.h"

namespace rgpu::security::events {

using Fill = std::function<void(wire::Call::Builder)>;
namespace d = apigen::driver;

// A generated driver call: `function`'s ordinal and packed arguments; sync
// calls want a reply.
inline Fill invoke(uint32_t function, protocol::ArgWriter& w, bool sync) {
  return [function, sync, args = w.take()](wire::Call::Builder c) {
    protocol::set_invoke(c, wire::Api::DRIVER, function, args, sync);
  };
}

inline Fill create(uint64_t event, unsigned flags = 0) {
  protocol::ArgWriter w;
  d::pack_cuEventCreate(w, event, flags);
  return invoke(d::k_cuEventCreate, w, false);
}

inline Fill record(uint64_t event, uint64_t stream) {
  protocol::ArgWriter w;
  d::pack_cuEventRecord(w, event, stream);
  return invoke(d::k_cuEventRecord, w, false);
}

inline Fill query(uint64_t event) {
  protocol::ArgWriter w;
  d::pack_cuEventQuery(w, event);
  return invoke(d::k_cuEventQuery, w, true);
}

inline Fill elapsed(uint64_t start, uint64_t end) {
  protocol::ArgWriter w;
  d::pack_cuEventElapsedTime_v2(w, nullptr, start, end);
  return invoke(d::k_cuEventElapsedTime_v2, w, true);
}

inline Fill destroy(uint64_t event) {
  protocol::ArgWriter w;
  d::pack_cuEventDestroy_v2(w, event);
  return invoke(d::k_cuEventDestroy_v2, w, false);
}

}  // namespace rgpu::security::events

namespace rgpu::security::streams {

using events::Fill;
using events::invoke;
namespace d = apigen::driver;

inline Fill create(uint64_t stream, unsigned flags = 0, int priority = 0) {
  protocol::ArgWriter w;
  d::pack_cuStreamCreateWithPriority(w, stream, flags, priority);
  return invoke(d::k_cuStreamCreateWithPriority, w, false);
}

inline Fill query(uint64_t stream) {
  protocol::ArgWriter w;
  d::pack_cuStreamQuery(w, stream);
  return invoke(d::k_cuStreamQuery, w, true);
}

inline Fill destroy(uint64_t stream) {
  protocol::ArgWriter w;
  d::pack_cuStreamDestroy_v2(w, stream);
  return invoke(d::k_cuStreamDestroy_v2, w, false);
}

}  // namespace rgpu::security::streams
