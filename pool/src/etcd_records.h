// Private to the etcd store: the JSON records it keeps in etcd (a server's
// registration, a lease, the holds on one slice) and the record-level room
// check that makes a slice impossible to grant twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool::detail {

struct ServerRecord {
  ServerInfo info;
  int64_t etcd_lease = 0;  // the server's liveness; any instance renews it
};

// What one lease holds of one slice.
struct SliceHold {
  LeaseId lease = 0;
  uint64_t memory = 0;
  uint32_t units = 0;  // compute share in 1/10000
};

std::string encode_server(const ServerRecord& r);
Result<ServerRecord> decode_server(const std::string& text);
std::string encode_lease(const Lease& l, const std::string& instance);
Result<Lease> decode_lease(const std::string& text);
std::string encode_holds(const std::vector<SliceHold>& holds);
Result<std::vector<SliceHold>> decode_holds(const std::string& text);

// The slice of `server` that a placed device names, as placement sees it
// (a device without slices is one slice 0 of all of it, any sessions).
// False when the server has no such device or slice.
bool find_slice(const ServerInfo& server, uint32_t device, uint32_t slice, Slice* out);
// Whether `holds` plus `add` fit `slice`: memory and share sums, sessions.
bool holds_fit(const Slice& slice, const std::vector<SliceHold>& holds, const SliceHold& add);

}  // namespace rgpu::pool::detail
