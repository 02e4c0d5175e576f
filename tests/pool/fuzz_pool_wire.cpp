// Fuzzes what rgpu-pool and its peers read from the network: a byte stream
// cut into frames (net.h) and each message read as the service reads it
// (wire.h). An input starting with 'g' is first turned into one well-formed
// message of a kind picked by the next byte, with the rest as its texts and
// numbers, so the fuzzer reaches the field readers; anything else is the
// raw stream. Anything may be refused; nothing may crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "rgpu/pool/net.h"
#include "rgpu/pool/wire.h"

namespace {

using rgpu::poolwire::PoolMessage;
namespace wire = rgpu::pool::wire;

void visit(PoolMessage::Reader m) {
  switch (m.which()) {
    case PoolMessage::REGISTER: (void)wire::read(m.getRegister()); break;
    case PoolMessage::HEARTBEAT:
      for (auto u : m.getHeartbeat().getUse()) (void)u.getUtilization();
      break;
    case PoolMessage::SUBMIT: {
      auto request = wire::read(m.getSubmit());
      (void)wire::read_text(m.getSubmit().getProgram(), "program");
      // A pool with tenant keys checks the request's proof.
      if (request.is_ok()) (void)wire::verify(m.getSubmit(), request.value(), "tenant-key", 0);
      break;
    }
    case PoolMessage::GRANTED: (void)wire::read_placement(m.getGranted().getPlacement()); break;
    case PoolMessage::ERROR: (void)wire::read_text(m.getError().getMessage(), "error", 4096); break;
    case PoolMessage::END_SESSION: (void)wire::verify(m.getEndSession(), "pool-key", "s1", 0); break;
    case PoolMessage::STATUS:
      for (auto s : m.getStatus().getServers()) {
        for (auto d : s.getDevices()) (void)wire::read(d);
      }
      for (auto l : m.getStatus().getLeases()) (void)wire::read_placement(l.getPlacement());
      for (auto q : m.getStatus().getQueue()) (void)wire::read(q.getRequest());
      break;
    default: break;
  }
}

void consume(const std::byte* data, size_t size) {
  rgpu::pool::net::FrameReader reader(4096);
  reader.append(data, size);
  while (true) {
    auto m = reader.next();
    if (!m.is_ok() || !m.value()) return;
    try {
      visit(m.value()->root());
    } catch (const std::exception&) {
      // a field that failed to read: the service answers with an error
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 2 && data[0] == 'g') {
    const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
    uint64_t n = 0;
    std::memcpy(&n, rest.data(), std::min(rest.size(), sizeof n));
    capnp::MallocMessageBuilder b;
    auto root = b.initRoot<PoolMessage>();
    switch (data[1] % 5) {
      case 0: {
        auto r = root.initRegister();
        r.setId(rest);
        r.setAddress(rest);
        auto d = r.initDevices(2);
        d[0].setKind(rest);
        d[0].setMemoryBytes(n);
        d[1].initSlices(1)[0].setShareUnits(static_cast<uint32_t>(n));
        break;
      }
      case 1: {
        auto s = root.initSubmit();
        s.setKind(rest);
        s.setTenant(rest);
        s.setShareUnits(static_cast<uint32_t>(n));
        s.setTimeoutMs(static_cast<int64_t>(n));
        s.setNonce(rest);
        s.setProof(rest);
        s.setTimeMs(static_cast<int64_t>(n));
        break;
      }
      case 2: {
        auto g = root.initGranted();
        g.setToken(rest);
        auto p = g.initPlacement(1);
        p[0].setServerId(rest);
        p[0].setShareUnits(static_cast<uint32_t>(n));
        break;
      }
      case 3: {
        auto e = root.initEndSession();
        e.setLeaseId(n);
        e.setReason(rest);
        e.setServerId(rest);
        e.setProof(rest);
        e.setTimeMs(static_cast<int64_t>(n));
        break;
      }
      default: root.initHeartbeat().initUse(1)[0].setUtilization(static_cast<float>(n));
    }
    const auto framed = rgpu::pool::net::frame(b);
    consume(framed.data(), framed.size());
    return 0;
  }
  consume(reinterpret_cast<const std::byte*>(data), size);
  return 0;
}
