// Model to wire and back, with every field of untrusted input checked.
#include "rgpu/pool/wire.h"

#include <exception>

#include "rgpu/pool/lease_token.h"

namespace rgpu::pool::wire {

void write(poolwire::Device::Builder out, const Device& device) {
  out.setIndex(device.index);
  out.setKind(device.kind);
  out.setComputeCapability(device.compute_capability);
  out.setMemoryBytes(device.memory_bytes);
  auto slices = out.initSlices(static_cast<unsigned>(device.slices.size()));
  for (size_t i = 0; i < device.slices.size(); ++i) {
    const Slice& s = device.slices[i];
    slices[i].setId(s.id);
    slices[i].setMemoryBytes(s.memory_bytes);
    slices[i].setShareUnits(share_to_units(s.share));
    slices[i].setMaxSessions(s.max_sessions);
  }
}

void write(poolwire::Register::Builder out, const ServerInfo& server) {
  out.setId(server.id);
  out.setAddress(server.address);
  auto devices = out.initDevices(static_cast<unsigned>(server.devices.size()));
  for (size_t i = 0; i < server.devices.size(); ++i) write(devices[i], server.devices[i]);
}

void sign(poolwire::Register::Builder out, std::string_view key, Millis now) {
  out.setTimeMs(now);
  const auto id = out.getId();
  const auto address = out.getAddress();
  const std::string proof = register_proof(key, std::string_view(id.cStr(), id.size()),
                                           std::string_view(address.cStr(), address.size()), out.getBootId(), now);
  out.setProof(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(proof.data()), proof.size()));
}

void write(poolwire::Request::Builder out, const Request& request) {
  out.setDevices(request.devices);
  out.setMemoryBytes(request.memory_bytes);
  out.setShareUnits(share_to_units(request.share));
  out.setKind(kind_wanted_name(request.kind));
  out.setMinComputeCapability(request.min_compute_capability);
  out.setPriority(request.priority);
  out.setTenant(request.tenant);
  out.setTimeoutMs(request.timeout_ms);
}

Status sign(poolwire::Request::Builder out, const Request& request, std::string_view secret, Millis now) {
  auto nonce = random_lease_nonce();
  if (!nonce.is_ok()) return nonce.status();
  const auto program = out.getProgram();
  const auto host = out.getHostname();
  out.setTimeMs(now);
  out.setNonce(nonce.value());
  out.setProof(request_proof(secret, request, std::string_view(program.cStr(), program.size()),
                             std::string_view(host.cStr(), host.size()), now, nonce.value()));
  return Status::ok();
}

Result<std::string> verify(poolwire::Request::Reader in, const Request& request, std::string_view secret, Millis now) {
  auto program = read_text(in.getProgram(), "program");
  auto host = read_text(in.getHostname(), "hostname");
  auto nonce = read_text(in.getNonce(), "nonce", 128);
  auto proof = read_text(in.getProof(), "proof", 128);
  for (const auto* r : {&program, &host, &nonce, &proof}) {
    if (!r->is_ok()) return r->status();
  }
  if (Status s = verify_request_proof(secret, proof.value(), request, program.value(), host.value(), in.getTimeMs(),
                                      nonce.value(), now);
      !s.is_ok()) {
    return s;
  }
  return nonce.value();
}

void sign(poolwire::LeaseEnd::Builder out, std::string_view key, std::string_view server_id, Millis now) {
  const auto reason = out.getReason();
  out.setServerId(std::string(server_id));
  out.setTimeMs(now);
  out.setProof(end_session_proof(key, server_id, out.getLeaseId(), std::string_view(reason.cStr(), reason.size()),
                                 now));
}

Status verify(poolwire::LeaseEnd::Reader in, std::string_view key, std::string_view server_id, Millis now) {
  auto reason = read_text(in.getReason(), "reason");
  auto to = read_text(in.getServerId(), "server id");
  auto proof = read_text(in.getProof(), "proof", 128);
  for (const auto* r : {&reason, &to, &proof}) {
    if (!r->is_ok()) return r->status();
  }
  if (proof.value().empty()) return invalid_argument("the order carries no proof of the pool's key");
  if (to.value() != server_id) return invalid_argument("the order is for server '" + to.value() + "'");
  return verify_end_session_proof(key, proof.value(), server_id, in.getLeaseId(), reason.value(), in.getTimeMs(),
                                  now);
}

void write(poolwire::PlacedDevice::Builder out, const PlacedDevice& placed) {
  out.setServerId(placed.server_id);
  out.setAddress(placed.address);
  out.setDevice(placed.device);
  out.setSlice(placed.slice);
  out.setMemoryBytes(placed.memory_bytes);
  out.setShareUnits(share_to_units(placed.share));
}

void write_placement(capnp::List<poolwire::PlacedDevice>::Builder out, const Placement& placement) {
  for (size_t i = 0; i < placement.size(); ++i) write(out[static_cast<unsigned>(i)], placement[i]);
}

Result<std::string> read_text(capnp::Text::Reader text, const char* what, size_t max) {
  try {
    if (text.size() > max) {
      return invalid_argument(std::string(what) + " is longer than " + std::to_string(max) + " bytes");
    }
    std::string out(text.cStr(), text.size());
    for (char c : out) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return invalid_argument(std::string(what) + " holds a control character");
      }
    }
    return out;
  } catch (const std::exception& e) {  // a text without its terminator
    return invalid_argument(std::string(what) + ": " + e.what());
  }
}

namespace {

Result<double> read_share(uint32_t units, const char* what) {
  if (units > kShareUnits) {
    return invalid_argument(std::string(what) + " of " + std::to_string(units) + "/10000 is over one device");
  }
  return units_to_share(units);
}

}  // namespace

Result<Device> read(poolwire::Device::Reader in) {
  Device d;
  d.index = in.getIndex();
  auto kind = read_text(in.getKind(), "device kind");
  if (!kind.is_ok()) return kind.status();
  d.kind = std::move(kind.value());
  d.compute_capability = in.getComputeCapability();
  d.memory_bytes = in.getMemoryBytes();
  auto slices = in.getSlices();
  if (slices.size() > kMaxSlicesPerDevice) return invalid_argument("too many slices on device " + std::to_string(d.index));
  for (auto s : slices) {
    auto share = read_share(s.getShareUnits(), "slice share");
    if (!share.is_ok()) return share.status();
    d.slices.push_back(Slice{s.getId(), s.getMemoryBytes(), share.value(), s.getMaxSessions()});
  }
  return d;
}

Result<ServerInfo> read(poolwire::Register::Reader in) {
  ServerInfo s;
  auto id = read_text(in.getId(), "server id");
  if (!id.is_ok()) return id.status();
  auto address = read_text(in.getAddress(), "server address");
  if (!address.is_ok()) return address.status();
  s.id = std::move(id.value());
  s.address = std::move(address.value());
  if (s.address.empty()) return invalid_argument("server " + s.id + " registers without an address");
  auto devices = in.getDevices();
  if (devices.size() > kMaxDevicesPerServer) return invalid_argument("too many devices in registration");
  for (auto d : devices) {
    auto dev = read(d);
    if (!dev.is_ok()) return dev.status();
    s.devices.push_back(std::move(dev.value()));
  }
  return s;
}

Result<Request> read(poolwire::Request::Reader in) {
  Request r;
  r.devices = in.getDevices();
  r.memory_bytes = in.getMemoryBytes();
  auto share = read_share(in.getShareUnits(), "requested share");
  if (!share.is_ok()) return share.status();
  r.share = share.value();
  auto kind_text = read_text(in.getKind(), "kind");
  if (!kind_text.is_ok()) return kind_text.status();
  auto kind = parse_kind_wanted(kind_text.value());
  if (!kind.is_ok()) return kind.status();
  r.kind = kind.value();
  r.min_compute_capability = in.getMinComputeCapability();
  r.priority = in.getPriority();
  auto tenant = read_text(in.getTenant(), "tenant");
  if (!tenant.is_ok()) return tenant.status();
  r.tenant = tenant.value().empty() ? "default" : std::move(tenant.value());
  r.timeout_ms = in.getTimeoutMs();
  if (r.timeout_ms < 0) return invalid_argument("negative timeout");
  return r;
}

Result<PlacedDevice> read(poolwire::PlacedDevice::Reader in) {
  PlacedDevice p;
  auto id = read_text(in.getServerId(), "server id");
  if (!id.is_ok()) return id.status();
  auto address = read_text(in.getAddress(), "server address");
  if (!address.is_ok()) return address.status();
  p.server_id = std::move(id.value());
  p.address = std::move(address.value());
  p.device = in.getDevice();
  p.slice = in.getSlice();
  p.memory_bytes = in.getMemoryBytes();
  auto share = read_share(in.getShareUnits(), "placed share");
  if (!share.is_ok()) return share.status();
  p.share = share.value();
  return p;
}

Result<Placement> read_placement(capnp::List<poolwire::PlacedDevice>::Reader in) {
  if (in.size() > kMaxDevicesPerRequest) return invalid_argument("placement of too many devices");
  Placement out;
  for (auto p : in) {
    auto d = read(p);
    if (!d.is_ok()) return d.status();
    out.push_back(std::move(d.value()));
  }
  return out;
}

}  // namespace rgpu::pool::wire
