// RawPeer: a connection whose every byte the test chooses.
#include "raw_peer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <span>

#include "driver_pack.h"
#include "kernels.h"
#include "rgpu/protocol/args.h"
#include "rgpu/fatbin/fatbin.h"
#include "wire_edit.h"

namespace rgpu::security {
namespace auth = protocol::auth;

std::string Answer::describe() const {
  switch (kind) {
    case Kind::kReply:
      return "reply result=" + std::to_string(result) + " async_error=" + std::to_string(async_error) +
             (message.empty() ? "" : " message=\"" + message + "\"");
    case Kind::kChallenge: return "challenge";
    case Kind::kWelcome: return "accepted welcome tenant=" + tenant;
    case Kind::kRefused: return "refused: " + message;
    case Kind::kClosed: return "closed";
    case Kind::kTimeout: return "no answer (time-out)";
  }
  return "?";
}

std::unique_ptr<RawPeer> RawPeer::connect(transport::Transport& transport, const std::string& address) {
  std::unique_ptr<RawPeer> peer(new RawPeer());
  RawPeer* self = peer.get();
  transport::ConnectionHandler handler;
  handler.on_message = [self](transport::Connection&, transport::Message m) { self->on_message(std::move(m)); };
  handler.on_closed = [self](transport::Connection&, const Status&) { self->on_closed(); };
  auto c = transport.connect(address, std::move(handler), std::chrono::milliseconds(5000));
  if (!c.is_ok()) return nullptr;
  peer->connection_ = std::move(c.value());
  return peer;
}

RawPeer::~RawPeer() {
  if (connection_) connection_->close();
  // The handlers point at this object: wait (bounded) until the transport
  // has reported the close, after which it calls them no more.
  wait_closed(5000ms);
}

void RawPeer::on_message(transport::Message message) {
  Arrived a;
  a.message = std::move(message);
  if (a.message.payload) {
    std::lock_guard<std::mutex> lock(mu_);
    if (hold_payloads_.load()) held_.push_back(std::move(a.message.payload));
  }
  if (a.message.payload) {
    a.payload.resize(a.message.payload->size());
    if (!a.message.payload->receive(a.payload.data()).is_ok()) a.payload.clear();
    a.message.payload.reset();
  }
  auto decoded = protocol::decode(a.message.header);
  if (decoded.is_ok()) a.decoded = std::move(decoded.value());
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(std::move(a));
  cv_.notify_all();
}

size_t RawPeer::payloads_held() {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

std::vector<std::vector<uint8_t>> RawPeer::take_held_payloads() {
  std::vector<std::unique_ptr<transport::IncomingPayload>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_payloads_ = false;
    held.swap(held_);
  }
  std::vector<std::vector<uint8_t>> out;
  for (auto& payload : held) {
    std::vector<uint8_t> bytes(payload->size());
    if (!payload->receive(bytes.data()).is_ok()) bytes.clear();
    out.push_back(std::move(bytes));
  }
  return out;
}

void RawPeer::on_closed() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool RawPeer::closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

bool RawPeer::wait_closed(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return closed_; });
}

bool RawPeer::send(const std::vector<std::byte>& header, transport::Bytes payload) {
  return connection_->send(transport::Bytes(header.data(), header.size()), payload).is_ok();
}

Answer RawPeer::wait(uint64_t id, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    while (!inbox_.empty()) {
      Arrived a = std::move(inbox_.front());
      inbox_.pop_front();
      if (!a.decoded) continue;
      auto envelope = a.decoded->envelope();
      Answer out;
      switch (envelope.which()) {
        case wire::Envelope::REPLY: {
          auto reply = envelope.getReply();
          if (id != 0 && reply.getId() != id) continue;
          out.kind = Answer::Kind::kReply;
          out.result = static_cast<CUresult>(reply.getResult());
          out.async_error = static_cast<CUresult>(reply.getAsyncError());
          for (auto v : reply.getValues()) out.values.push_back(v);
          if (reply.getPayloadBytes() > 0) {
            out.bytes = std::move(a.payload);
          } else {
            out.bytes.assign(reply.getBytes().begin(), reply.getBytes().end());
          }
          if (reply.hasMessage()) out.message = reply.getMessage();
          return out;
        }
        case wire::Envelope::CHALLENGE:
          out.kind = Answer::Kind::kChallenge;
          out.server_nonce.assign(envelope.getChallenge().getServerNonce().begin(),
                                  envelope.getChallenge().getServerNonce().end());
          return out;
        case wire::Envelope::WELCOME: {
          auto welcome = envelope.getWelcome();
          out.kind = welcome.getAccepted() ? Answer::Kind::kWelcome : Answer::Kind::kRefused;
          out.message = welcome.getRefusal();
          out.tenant = welcome.getTenant();
          out.server_proof.assign(welcome.getServerProof().begin(), welcome.getServerProof().end());
          out.protocol_version = welcome.getProtocolVersion();
          out.min_protocol_version = welcome.getMinProtocolVersion();
          out.max_protocol_version = welcome.getMaxProtocolVersion();
          out.features = welcome.getFeatures();
          out.granted_devices = welcome.getGranted().getDevices();
          return out;
        }
        default:
          continue;  // device output, copy completions
      }
    }
    if (closed_) return Answer{Answer::Kind::kClosed};
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox_.empty() && !closed_) {
      return Answer{Answer::Kind::kTimeout};
    }
  }
}

std::vector<std::byte> RawPeer::hello(const std::string& tenant, const auth::Nonce& nonce, const std::string& program) {
  capnp::MallocMessageBuilder builder(kOneSegmentWords);
  auto hello = builder.initRoot<wire::Envelope>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION);
  hello.setClientBuild("attack-build");
  hello.setPid(4242);
  hello.setHostname("attack-host");
  hello.setProgram(program);
  hello.setTenant(tenant);
  hello.setClientNonce(kj::arrayPtr(nonce.data(), nonce.size()));
  return to_bytes(builder);
}

std::vector<std::byte> RawPeer::hello(const std::string& tenant, const auth::Nonce& nonce, uint32_t oldest,
                                      uint32_t newest, uint64_t features) {
  capnp::MallocMessageBuilder builder(kOneSegmentWords);
  auto hello = builder.initRoot<wire::Envelope>().initHello();
  hello.setProtocolVersion(newest);
  hello.setMinProtocolVersion(oldest);
  hello.setFeatures(features);
  hello.setClientBuild("attack-build");
  hello.setPid(4242);
  hello.setHostname("attack-host");
  hello.setProgram("attacker");
  hello.setTenant(tenant);
  hello.setClientNonce(kj::arrayPtr(nonce.data(), nonce.size()));
  return to_bytes(builder);
}

std::vector<std::byte> RawPeer::authenticate(const std::vector<uint8_t>& proof) {
  capnp::MallocMessageBuilder builder(kOneSegmentWords);
  builder.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
  return to_bytes(builder);
}

RawPeer::Handshake RawPeer::handshake(const std::string& tenant, const std::string& secret) {
  const auth::Nonce nonce = auth::random_nonce().value();
  return handshake(tenant, secret, hello(tenant, nonce), nonce);
}

RawPeer::Handshake RawPeer::handshake(const std::string& tenant, const std::string& secret,
                                      const std::vector<std::byte>& hello_bytes, const auth::Nonce& nonce) {
  Handshake h;
  h.client_nonce = nonce;
  if (!send(hello_bytes)) return h;
  h.last = wait();
  if (h.last.kind != Answer::Kind::kChallenge || h.last.server_nonce.size() != auth::kNonceBytes) return h;
  h.server_nonce = h.last.server_nonce;
  auth::Nonce server_nonce;
  std::memcpy(server_nonce.data(), h.server_nonce.data(), server_nonce.size());
  h.proof = auth::client_proof(secret, tenant, h.client_nonce, server_nonce);
  if (!send(authenticate({h.proof.begin(), h.proof.end()}))) return h;
  h.last = wait();
  h.welcomed = h.last.kind == Answer::Kind::kWelcome;
  const auth::Proof expected = auth::server_proof(secret, tenant, h.client_nonce, server_nonce);
  h.server_proof_ok = auth::equal_constant_time(h.last.server_proof, expected);
  return h;
}

std::vector<std::byte> RawPeer::batch(uint64_t ctx, const std::vector<Fill>& fills, uint64_t* last_id) {
  capnp::MallocMessageBuilder builder(kOneSegmentWords);
  auto calls = builder.initRoot<wire::Envelope>().initBatch().initCalls(static_cast<unsigned>(fills.size()));
  for (size_t i = 0; i < fills.size(); ++i) {
    auto call = calls[i].initCall();
    call.setId(next_id_++);
    call.setCtx(ctx);
    fills[i](call);
    if (last_id) *last_id = call.getId();
  }
  return to_bytes(builder);
}

Answer RawPeer::calls(uint64_t ctx, const std::vector<Fill>& fills, transport::Bytes payload) {
  uint64_t id = 0;
  auto bytes = batch(ctx, fills, &id);
  if (!send(bytes, payload)) return Answer{Answer::Kind::kClosed};
  return wait(id);
}

bool RawPeer::post(uint64_t ctx, const std::vector<Fill>& fills) {
  uint64_t id = 0;
  return send(batch(ctx, fills, &id));
}

bool RawPeer::open_context() {
  auto a = calls(kCtx, {[](wire::Call::Builder c) {
                       auto p = c.initPrimaryCtxRetain();
                       p.setHandle(kCtx);
                       p.setDevice(0);
                     },
                     [](wire::Call::Builder c) { c.setCtxSynchronize(); }});
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS || a.async_error != CUDA_SUCCESS) {
    ADD_FAILURE() << "context: " << a.describe();
    return false;
  }
  return true;
}

uint64_t RawPeer::alloc(uint64_t size) {
  auto a = call(kCtx, [&](wire::Call::Builder c) { c.setMemAlloc(size); });
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS || a.values.size() != 1) {
    ADD_FAILURE() << "alloc: " << a.describe();
    return 0;
  }
  return a.values[0];
}

bool RawPeer::write(uint64_t ptr, const std::vector<uint8_t>& data) {
  auto a = call(kCtx, [&](wire::Call::Builder c) {
    auto in = c.initMemcpyHtoD();
    in.setStream(protocol::kNullStream);
    in.setDst(ptr);
    in.setSize(data.size());
    in.setBytes(kj::arrayPtr(data.data(), data.size()));
  });
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS) {
    ADD_FAILURE() << "write: " << a.describe();
    return false;
  }
  return true;
}

std::vector<uint8_t> RawPeer::read(uint64_t ptr, uint64_t size) {
  auto a = call(kCtx, [&](wire::Call::Builder c) {
    auto out = c.initMemcpyDtoH();
    out.setStream(protocol::kNullStream);
    out.setSrc(ptr);
    out.setSize(size);
  });
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS) {
    ADD_FAILURE() << "read: " << a.describe();
    return {};
  }
  return a.bytes;
}

uint64_t RawPeer::free_device_bytes() {
  size_t free_b = 0, total = 0;
  protocol::ArgWriter args;
  apigen::driver::pack_cuMemGetInfo_v2(args, &free_b, &total);
  std::vector<std::byte> packed(args.bytes().begin(), args.bytes().end());
  const Answer a = call(kCtx, [&packed](wire::Call::Builder c) {
    protocol::set_invoke(c, wire::Api::DRIVER, apigen::driver::k_cuMemGetInfo_v2, packed, true);
  });
  protocol::ArgReader reader(std::as_bytes(std::span(a.bytes)));
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS ||
      !apigen::driver::unpack_cuMemGetInfo_v2(reader, &free_b, &total)) {
    return 0;
  }
  return free_b;
}

bool RawPeer::load_kernels(uint64_t module, uint64_t function, const std::string& name) {
  const std::vector<uint8_t> image = kernels_image();
  const fatbin::ContentHash hash = fatbin::content_hash(fatbin::Bytes(image.data(), image.size()));
  auto a = calls(kCtx, {[&](wire::Call::Builder c) {
                          auto m = c.initModuleLoad();
                          m.setHandle(module);
                          m.setHash(kj::arrayPtr(hash.bytes.data(), hash.bytes.size()));
                          m.setImage(kj::arrayPtr(image.data(), image.size()));
                          m.setImageBytes(image.size());
                        }});
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS) {
    ADD_FAILURE() << "module load: " << a.describe();
    return false;
  }
  a = calls(kCtx, {[&](wire::Call::Builder c) {
                     auto f = c.initModuleGetFunction();
                     f.setModule(module);
                     f.setHandle(function);
                     f.setName(name);
                   },
                   [&](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(function); }});
  if (a.kind != Answer::Kind::kReply || a.result != CUDA_SUCCESS || a.async_error != CUDA_SUCCESS) {
    ADD_FAILURE() << "get function " << name << ": " << a.describe();
    return false;
  }
  return true;
}

Answer RawPeer::launch_and_sync(uint64_t function, const std::vector<uint8_t>& params) {
  return calls(kCtx, {[&](wire::Call::Builder c) {
                        auto l = c.initLaunchKernel();
                        l.setStream(protocol::kNullStream);
                        l.setFunction(function);
                        l.setGridX(1), l.setGridY(1), l.setGridZ(1);
                        l.setBlockX(1), l.setBlockY(1), l.setBlockZ(1);
                        l.setParams(kj::arrayPtr(params.data(), params.size()));
                      },
                      [](wire::Call::Builder c) { c.setCtxSynchronize(); }});
}

}  // namespace rgpu::security
