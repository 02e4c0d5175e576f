// The pool's records in etcd, as JSON. They come from other pool instances,
// so a malformed one is an error, never a crash.
#include "etcd_records.h"

#include <nlohmann/json.hpp>

#include "etcd_json.h"

namespace rgpu::pool::detail {

using nlohmann::json;

namespace {

// Decodes with nlohmann's checked accessors; any type error becomes a
// failed status naming the record kind.
template <class T, class F>
Result<T> guarded(const std::string& text, const char* what, F&& fn) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return failed(std::string("malformed ") + what + " record");
  try {
    return fn(j);
  } catch (const json::exception& e) {
    return failed(std::string("malformed ") + what + " record: " + e.what());
  }
}

uint64_t u64(const json& j, const char* field) { return static_cast<uint64_t>(i64(j, field)); }

}  // namespace

std::string encode_server(const ServerRecord& r) {
  json devices = json::array();
  for (const Device& d : r.info.devices) {
    json slices = json::array();
    for (const Slice& s : d.slices) {
      slices.push_back({{"id", s.id},
                        {"memory", std::to_string(s.memory_bytes)},
                        {"share_units", share_to_units(s.share)},
                        {"max_sessions", s.max_sessions}});
    }
    devices.push_back({{"index", d.index},
                       {"kind", d.kind},
                       {"cc", d.compute_capability},
                       {"memory", std::to_string(d.memory_bytes)},
                       {"slices", slices}});
  }
  return json{{"id", r.info.id}, {"address", r.info.address}, {"devices", devices},
              {"etcd_lease", std::to_string(r.etcd_lease)}}
      .dump();
}

Result<ServerRecord> decode_server(const std::string& text) {
  return guarded<ServerRecord>(text, "server", [](const json& j) -> Result<ServerRecord> {
    ServerRecord r;
    r.info.id = j.at("id").get<std::string>();
    r.info.address = j.at("address").get<std::string>();
    r.etcd_lease = i64(j, "etcd_lease");
    for (const json& d : j.at("devices")) {
      Device dev;
      dev.index = d.at("index").get<uint32_t>();
      dev.kind = d.at("kind").get<std::string>();
      dev.compute_capability = d.at("cc").get<uint32_t>();
      dev.memory_bytes = u64(d, "memory");
      for (const json& s : d.at("slices")) {
        Slice sl;
        sl.id = s.at("id").get<uint32_t>();
        sl.memory_bytes = u64(s, "memory");
        sl.share = units_to_share(s.at("share_units").get<uint32_t>());
        sl.max_sessions = s.at("max_sessions").get<uint32_t>();
        dev.slices.push_back(sl);
      }
      r.info.devices.push_back(std::move(dev));
    }
    Status v = validate(r.info);
    if (!v.is_ok()) return v;
    return r;
  });
}

std::string encode_lease(const Lease& l, const std::string& instance) {
  json placement = json::array();
  for (const PlacedDevice& p : l.placement) {
    placement.push_back({{"server", p.server_id},
                         {"address", p.address},
                         {"device", p.device},
                         {"slice", p.slice},
                         {"memory", std::to_string(p.memory_bytes)},
                         {"share_units", share_to_units(p.share)}});
  }
  return json{{"id", std::to_string(l.id)},
              {"tenant", l.tenant},
              {"priority", l.priority},
              {"issued", std::to_string(l.issued)},
              {"expiry", std::to_string(l.expiry)},
              {"nonce", l.nonce},
              {"instance", instance},
              {"placement", placement}}
      .dump();
}

Result<Lease> decode_lease(const std::string& text) {
  return guarded<Lease>(text, "lease", [](const json& j) -> Result<Lease> {
    Lease l;
    l.id = static_cast<LeaseId>(i64(j, "id"));
    l.tenant = j.at("tenant").get<std::string>();
    l.priority = j.at("priority").get<int32_t>();
    l.issued = i64(j, "issued");
    l.expiry = i64(j, "expiry");
    l.nonce = j.value("nonce", "");
    for (const json& p : j.at("placement")) {
      PlacedDevice pd;
      pd.server_id = p.at("server").get<std::string>();
      pd.address = p.at("address").get<std::string>();
      pd.device = p.at("device").get<uint32_t>();
      pd.slice = p.at("slice").get<uint32_t>();
      pd.memory_bytes = u64(p, "memory");
      pd.share = units_to_share(p.at("share_units").get<uint32_t>());
      l.placement.push_back(std::move(pd));
    }
    if (l.id == 0 || l.placement.empty()) return failed("lease record without an id or placement");
    return l;
  });
}

std::string encode_holds(const std::vector<SliceHold>& holds) {
  json a = json::array();
  for (const SliceHold& h : holds) {
    a.push_back({{"lease", std::to_string(h.lease)}, {"memory", std::to_string(h.memory)}, {"share_units", h.units}});
  }
  return json{{"holds", a}}.dump();
}

Result<std::vector<SliceHold>> decode_holds(const std::string& text) {
  return guarded<std::vector<SliceHold>>(text, "slice", [](const json& j) -> Result<std::vector<SliceHold>> {
    std::vector<SliceHold> out;
    for (const json& h : j.at("holds")) {
      out.push_back({static_cast<LeaseId>(i64(h, "lease")), u64(h, "memory"), h.at("share_units").get<uint32_t>()});
    }
    return out;
  });
}

bool find_slice(const ServerInfo& server, uint32_t device, uint32_t slice, Slice* out) {
  for (const Device& d : server.devices) {
    if (d.index != device) continue;
    if (d.slices.empty()) {
      if (slice != 0) return false;
      *out = Slice{0, d.memory_bytes, 1.0, 0};
      return true;
    }
    for (const Slice& s : d.slices) {
      if (s.id == slice) {
        *out = s;
        return true;
      }
    }
    return false;
  }
  return false;
}

bool holds_fit(const Slice& slice, const std::vector<SliceHold>& holds, const SliceHold& add) {
  uint64_t memory = add.memory;
  uint64_t units = add.units;
  for (const SliceHold& h : holds) {
    if (h.lease == add.lease) return false;
    memory += h.memory;
    units += h.units;
  }
  if (slice.max_sessions != 0 && holds.size() + 1 > slice.max_sessions) return false;
  return memory <= slice.memory_bytes && units <= share_to_units(slice.share);
}

}  // namespace rgpu::pool::detail
