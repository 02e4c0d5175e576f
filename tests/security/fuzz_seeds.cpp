// Writes the seed corpora of the security fuzzers: valid handshakes and
// batches of every call kind of the wire's Call union (valid and invalid
// arguments), in the record format of fuzz_input.h.
//   usage: rgpu_security_fuzz_seeds HANDSHAKE_DIR SESSION_DIR
#include <capnp/message.h>
#include <cuda.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "driver_calls.h"
#include "fuzz_input.h"
#include "kernels.h"
#include "rgpu/fatbin/fatbin.h"
#include "rgpu/protocol/admin.h"
#include "rgpu/protocol/negotiation.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/handles.h"

namespace {

using namespace rgpu;
using security::fuzz::append_record;
using Fill = std::function<void(wire::Call::Builder)>;
namespace events = security::events;
namespace streams = security::streams;

// Typed handles, as the client mints them: the n-th of each kind.
uint64_t minted(protocol::HandleKind kind, uint64_t n) { return protocol::make_handle(kind, protocol::kFirstMintedSerial + n); }
uint64_t S(uint64_t n) { return minted(protocol::HandleKind::kStream, n); }
uint64_t E(uint64_t n) { return minted(protocol::HandleKind::kEvent, n); }
uint64_t M(uint64_t n) { return minted(protocol::HandleKind::kModule, n); }
uint64_t F(uint64_t n) { return minted(protocol::HandleKind::kFunction, n); }
uint64_t C(uint64_t n) { return minted(protocol::HandleKind::kContext, n); }
constexpr uint64_t kCtx = protocol::primary_context(0);

std::vector<std::byte> bytes_of(capnp::MessageBuilder& b) {
  auto words = protocol::encode(b);
  auto bytes = protocol::as_bytes(words);
  return {bytes.begin(), bytes.end()};
}

// admin: an operator's hello (list sessions) instead of a session's.
std::vector<std::byte> hello(const std::string& tenant, bool nonce = true, uint32_t version = wire::PROTOCOL_VERSION,
                             bool admin = false) {
  capnp::MallocMessageBuilder b;
  auto h = b.initRoot<wire::Envelope>().initHello();
  h.setProtocolVersion(version);
  // What a client of this build can do (sealing, among others): a peer from
  // another host that cannot seal is refused at its hello.
  h.setFeatures(protocol::kBuildFeatures);
  h.setClientBuild("0.1.0");
  h.setHostname("seed-host");
  h.setProgram("seed");
  h.setPid(1);
  h.setTenant(tenant);
  if (admin) protocol::write_admin_request({protocol::AdminCommand::kListSessions, 0}, h.initAdmin());
  std::vector<uint8_t> n(32, 0x5a);
  if (nonce) h.setClientNonce(kj::arrayPtr(n.data(), n.size()));
  return bytes_of(b);
}

// A hello that states a version range and asks for resources.
std::vector<std::byte> ranged_hello(uint32_t oldest, uint32_t newest, uint32_t devices) {
  capnp::MallocMessageBuilder b;
  auto h = b.initRoot<wire::Envelope>().initHello();
  h.setProtocolVersion(newest);
  h.setMinProtocolVersion(oldest);
  h.setFeatures(~uint64_t{0});
  h.setTenant("alice");
  std::vector<uint8_t> n(32, 0x5a);
  h.setClientNonce(kj::arrayPtr(n.data(), n.size()));
  auto r = h.initRequest();
  r.setDevices(devices);
  r.setMemoryBytes(1 << 20);
  r.setLeaseSeconds(60);
  r.setLease("seed-lease");
  return bytes_of(b);
}

std::vector<std::byte> authenticate(size_t proof_bytes) {
  capnp::MallocMessageBuilder b;
  std::vector<uint8_t> p(proof_bytes, 0x33);
  b.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(p.data(), p.size()));
  return bytes_of(b);
}

// A symbolic device pointer: the session's latest allocation (back = 0) or
// an earlier one, plus an offset (see fuzz_session.cpp).
uint64_t sym(uint64_t offset, uint64_t back = 0) { return (uint64_t{0xA110C0DE} << 32) | (back << 24) | offset; }

std::vector<std::byte> batch(const std::vector<Fill>& fills) {
  static uint64_t id = 1;
  capnp::MallocMessageBuilder b;
  auto calls = b.initRoot<wire::Envelope>().initBatch().initCalls(static_cast<unsigned>(fills.size()));
  for (size_t i = 0; i < fills.size(); ++i) {
    auto c = calls[i].initCall();
    c.setId(id++);
    c.setCtx(kCtx);
    fills[i](c);
  }
  return bytes_of(b);
}

struct Seed {
  std::vector<uint8_t> bytes;
  void add(const std::vector<Fill>& fills, const std::vector<std::byte>& payload = {}) {
    append_record(&bytes, payload.empty() ? 0 : 1, batch(fills), payload);
  }
  void raw(uint8_t tag, const std::vector<std::byte>& header) { append_record(&bytes, tag, header); }
};

bool write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// Calls, by what they do.
Fill retain() {
  return [](wire::Call::Builder c) {
    auto r = c.initPrimaryCtxRetain();
    r.setHandle(kCtx);
  };
}
Fill create_ctx(uint64_t h) {
  return [h](wire::Call::Builder c) {
    auto r = c.initCtxCreate();
    r.setHandle(h);
  };
}
Fill alloc(uint64_t n) {
  return [n](wire::Call::Builder c) { c.setMemAlloc(n); };
}
Fill info() {
  return [](wire::Call::Builder c) { c.setMemGetInfo(); };
}
Fill ctx_sync() {
  return [](wire::Call::Builder c) { c.setCtxSynchronize(); };
}
Fill copy_in(uint64_t dst, uint64_t size, bool inline_bytes, bool async = false, uint64_t stream = protocol::kNullStream) {
  return [=](wire::Call::Builder c) {
    auto in = c.initMemcpyHtoD();
    in.setStream(protocol::kNullStream);
    in.setDst(dst);
    in.setSize(size);
    in.setAsync(async);
    in.setStream(stream);
    if (inline_bytes) {
      std::vector<uint8_t> b(size, 0x42);
      in.setBytes(kj::arrayPtr(b.data(), b.size()));
    }
  };
}
Fill copy_out(uint64_t src, uint64_t size, bool async = false, uint64_t stream = protocol::kNullStream) {
  return [=](wire::Call::Builder c) {
    auto o = c.initMemcpyDtoH();
    o.setStream(protocol::kNullStream);
    o.setSrc(src);
    o.setSize(size);
    o.setAsync(async);
    o.setStream(stream);
  };
}
Fill copy_dev(uint64_t dst, uint64_t src, uint64_t size, bool async = false) {
  return [=](wire::Call::Builder c) {
    auto d = c.initMemcpyDtoD();
    d.setStream(protocol::kNullStream);
    d.setDst(dst);
    d.setSrc(src);
    d.setSize(size);
    d.setAsync(async);
  };
}
Fill memset(uint64_t dst, uint8_t es, uint64_t count, bool async = false) {
  return [=](wire::Call::Builder c) {
    auto m = c.initMemset();
    m.setStream(protocol::kNullStream);
    m.setDst(dst);
    m.setValue(0x01020304);
    m.setElementSize(es);
    m.setCount(count);
    m.setAsync(async);
  };
}
Fill module_load(uint64_t handle, bool inline_image, bool by_hash_only = false) {
  return [=](wire::Call::Builder c) {
    const auto image = security::kernels_image();
    const auto hash = fatbin::content_hash(fatbin::Bytes(image.data(), image.size()));
    auto m = c.initModuleLoad();
    m.setHandle(handle);
    m.setHash(kj::arrayPtr(hash.bytes.data(), hash.bytes.size()));
    if (by_hash_only) return;
    m.setImageBytes(image.size());
    if (inline_image) m.setImage(kj::arrayPtr(image.data(), image.size()));
  };
}
Fill get_function(uint64_t module, uint64_t handle, const char* name) {
  return [=](wire::Call::Builder c) {
    auto f = c.initModuleGetFunction();
    f.setModule(module);
    f.setHandle(handle);
    f.setName(name);
  };
}
Fill launch(uint64_t function, std::vector<uint8_t> params, uint32_t grid = 1, uint32_t block = 32,
            uint64_t stream = protocol::kNullStream) {
  return [=](wire::Call::Builder c) {
    auto l = c.initLaunchKernel();
    l.setStream(protocol::kNullStream);
    l.setFunction(function);
    l.setGridX(grid), l.setGridY(1), l.setGridZ(1);
    l.setBlockX(block), l.setBlockY(1), l.setBlockZ(1);
    l.setStream(stream);
    l.setParams(kj::arrayPtr(params.data(), params.size()));
  };
}
Fill handle(void (*set)(wire::Call::Builder, uint64_t), uint64_t h) {
  return [=](wire::Call::Builder c) { set(c, h); };
}

std::vector<std::byte> image_bytes() {
  const auto image = security::kernels_image();
  const auto* p = reinterpret_cast<const std::byte*>(image.data());
  return {p, p + image.size()};
}

std::vector<Seed> session_seeds() {
  std::vector<Seed> seeds;
  {  // memory: every copy and memset form, valid
    Seed s;
    s.add({retain(), info()});
    s.add({alloc(65536)});
    s.add({copy_in(sym(0), 256, true)});
    s.add({copy_out(sym(0), 256)});
    s.add({copy_dev(sym(4096), sym(0), 256)});
    s.add({memset(sym(8192), 1, 100), memset(sym(8192), 2, 100, true), memset(sym(8192), 4, 100)});
    s.add({copy_in(sym(16), 40000, false)}, std::vector<std::byte>(40000, std::byte{7}));
    s.add({copy_out(sym(0), 40000)});
    s.add({[](wire::Call::Builder c) { c.setMemGetAddressRange(sym(100)); }});
    s.add({[](wire::Call::Builder c) { c.setMemFree(sym(0)); }});
    seeds.push_back(std::move(s));
  }
  {  // memory: invalid ranges, sizes and element sizes
    Seed s;
    s.add({retain(), alloc(4096)});
    s.add({copy_out(sym(0), ~uint64_t{0} - 4096)});
    s.add({copy_in(sym(4090), 16, true)});
    s.add({memset(sym(0), 3, 8)});
    s.add({memset(sym(0), 4, (~uint64_t{0} >> 2) + 1)});
    s.add({copy_dev(sym(0), sym(0) + 4000, 200)});
    s.add({copy_in(sym(0), 100, false)}, std::vector<std::byte>(50, std::byte{1}));
    s.add({[](wire::Call::Builder c) { c.setMemFree(sym(8)); }});
    s.add({alloc(0)});
    s.add({alloc(~uint64_t{0})});
    seeds.push_back(std::move(s));
  }
  {  // streams and events
    Seed s;
    s.add({retain(), alloc(4096)});
    s.add({streams::create(S(100)),
           events::create(E(200)),
           events::create(E(201)),
           events::record(E(200), S(100)),
           copy_in(sym(0), 64, true, true, S(100)), copy_out(sym(0), 64, true, S(100)),
           events::record(E(201), S(100)),
           [](wire::Call::Builder c) {
             auto w = c.initStreamWaitEvent();
             w.setStream(protocol::kNullStream);
             w.setEvent(E(201));
           },
           streams::query(S(100))});
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initStreamSynchronize().setHandle(h); }, S(100))});
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initEventSynchronize().setHandle(h); }, E(201))});
    s.add({events::query(E(200))});
    s.add({events::elapsed(E(200), E(201))});
    s.add({events::destroy(E(200)),
           streams::destroy(S(100)), ctx_sync()});
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initStreamSynchronize().setHandle(h); }, protocol::kPerThreadStream)});
    seeds.push_back(std::move(s));
  }
  {  // modules, functions, globals, launches
    Seed s;
    s.add({retain(), alloc(4096)});
    s.add({module_load(M(10), true)});
    s.add({get_function(M(10), F(11), "fill"), get_function(M(10), F(12), "poke"),
           handle([](wire::Call::Builder c, uint64_t h) { c.initFuncGetAttributes().setHandle(h); }, F(11))});
    s.add({[](wire::Call::Builder c) {
      auto g = c.initModuleGetGlobal();
      g.setModule(M(10));
      g.setName("counter");
    }});
    s.add({[](wire::Call::Builder c) {
             auto a = c.initFuncSetAttribute();
             a.setFunction(F(11));
             a.setAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
             a.setValue(1024);
           },
           launch(F(11), security::fill_params(sym(0), 5, 1024), 8, 128), launch(F(12), security::poke_params(sym(64))),
           copy_out(sym(0), 4096)});
    s.add({launch(F(12), security::poke_params(sym(4096))), ctx_sync()});  // out of bounds: an illegal address
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initModuleUnload().setHandle(h); }, M(10)), info()});
    s.add({module_load(M(13), false, true)});  // by hash, from the cache
    s.add({module_load(M(14), false)}, image_bytes());  // the image as the payload
    seeds.push_back(std::move(s));
  }
  {  // contexts, host functions, and handles that do not exist
    Seed s;
    s.add({create_ctx(C(5)), retain(), [](wire::Call::Builder c) { c.initLaunchHostFunc().setId(1); }, ctx_sync()});
    s.add({[](wire::Call::Builder c) {
             auto r = c.initPrimaryCtxRelease();
             r.setHandle(C(5));
           },
           info()});
    s.add({[](wire::Call::Builder c) { c.initPrimaryCtxReset().setHandle(kCtx); }});
    s.add({retain(), handle([](wire::Call::Builder c, uint64_t h) { c.initCtxDestroy().setHandle(h); }, C(77))});
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initStreamSynchronize().setHandle(h); }, 0xdead)});
    s.add({launch(F(999), {}), events::query(E(5))});
    s.add({get_function(M(55), F(56), "fill"), info()});
    s.add({handle([](wire::Call::Builder c, uint64_t h) { c.initCtxDestroy().setHandle(h); }, kCtx)});
    seeds.push_back(std::move(s));
  }
  {  // generated calls, and calls that want a reply
    Seed s;
    s.add({retain(), [](wire::Call::Builder c) {
             auto in = c.initInvoke();
             in.setApi(wire::Api::DRIVER);
             in.setFunction(1);
             const uint8_t args[8] = {1, 2, 3, 4, 5, 6, 7, 8};
             in.setArgs(kj::arrayPtr(args, sizeof args));
             c.setWantsReply(true);
           }});
    s.add({[](wire::Call::Builder c) {
             auto in = c.initInvoke();
             in.setApi(wire::Api::CUBLAS);
             in.setFunction(7);
           },
           [](wire::Call::Builder c) {
             c.setMemGetInfo();
             c.setWantsReply(true);
           }});
    seeds.push_back(std::move(s));
  }
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HANDSHAKE_DIR SESSION_DIR\n", argv[0]);
    return 2;
  }
  const std::string hs = argv[1], ss = argv[2];
  std::vector<std::vector<uint8_t>> handshakes(15);
  // tag 0: as given; 1: with a payload; 2: the right proof; 4: a wrong one.
  append_record(&handshakes[0], 0, hello("alice"));
  append_record(&handshakes[0], 2, {});
  append_record(&handshakes[1], 0, hello("bob"));
  append_record(&handshakes[1], 4, {});
  append_record(&handshakes[2], 0, hello("alice"));
  append_record(&handshakes[2], 0, authenticate(32));
  append_record(&handshakes[3], 0, hello(""));
  append_record(&handshakes[3], 2, {});
  append_record(&handshakes[3], 0, hello("alice"));
  append_record(&handshakes[4], 0, hello("alice", false));
  append_record(&handshakes[5], 0, hello("alice", true, wire::PROTOCOL_VERSION + 1));
  append_record(&handshakes[6], 0, authenticate(32));
  append_record(&handshakes[6], 0, hello("alice"));
  append_record(&handshakes[7], 1, hello("alice"), std::vector<std::byte>(8, std::byte{1}));
  append_record(&handshakes[8], 0, hello("eve"));
  append_record(&handshakes[8], 2, {});
  append_record(&handshakes[9], 0, hello("alice"));
  append_record(&handshakes[9], 0, hello("alice"));
  append_record(&handshakes[9], 0, authenticate(31));
  append_record(&handshakes[10], 0, ranged_hello(wire::MIN_PROTOCOL_VERSION, wire::PROTOCOL_VERSION + 4, 0));
  append_record(&handshakes[10], 2, {});
  append_record(&handshakes[11], 0, ranged_hello(1, 2, 1));
  const auto admin = hello("", true, wire::PROTOCOL_VERSION, true);
  append_record(&handshakes[12], 0, admin);
  append_record(&handshakes[12], 2, {});
  append_record(&handshakes[13], 0, admin);
  append_record(&handshakes[13], 4, {});
  append_record(&handshakes[14], 0, hello("", false, wire::PROTOCOL_VERSION, true));
  append_record(&handshakes[14], 0, authenticate(32));
  for (size_t i = 0; i < handshakes.size(); ++i) {
    if (!write(hs + "/seed-" + std::to_string(i), handshakes[i])) return 1;
  }
  const auto sessions = session_seeds();
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (!write(ss + "/seed-" + std::to_string(i), sessions[i].bytes)) return 1;
  }
  std::printf("seeds: %zu handshake, %zu session\n", handshakes.size(), sessions.size());
  return 0;
}
