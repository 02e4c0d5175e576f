// Builders of servers and requests for the scheduler's tests.
#pragma once

#include <string>

#include "rgpu/pool/model.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::testing {

constexpr uint64_t kGiB = 1ull << 30;

// `n` devices of one kind, each unsliced (one whole slice, any sessions).
inline ServerInfo server(const std::string& id, uint32_t n, const std::string& kind = "NVIDIA H100",
                         uint32_t cc = 90, uint64_t memory = 80 * kGiB) {
  ServerInfo s;
  s.id = id;
  s.address = id + ":7000";
  for (uint32_t i = 0; i < n; ++i) s.devices.push_back(Device{i, kind, cc, memory, {}});
  return s;
}

// One device cut into `slices` equal slices, each for up to `sessions`.
inline ServerInfo sliced_server(const std::string& id, uint32_t slices, uint32_t sessions,
                                uint64_t memory = 80 * kGiB) {
  ServerInfo s = server(id, 1, "NVIDIA H100", 90, memory);
  for (uint32_t i = 0; i < slices; ++i) {
    s.devices[0].slices.push_back(Slice{i, memory / slices, 1.0 / slices, sessions});
  }
  return s;
}

inline Request req(uint32_t devices, uint64_t memory = 0, const std::string& tenant = "t") {
  Request r;
  r.devices = devices;
  r.memory_bytes = memory;
  r.tenant = tenant;
  return r;
}

// The one grant a submit placed at once; fails the test when there is none.
inline Lease placed(const Result<Submitted>& s) {
  if (!s.is_ok() || s.value().changes.granted.empty()) {
    ADD_FAILURE() << "not placed: " << (s.is_ok() ? "queued" : s.status().to_string());
    return {};
  }
  return s.value().changes.granted.front().lease;
}

}  // namespace rgpu::pool::testing
