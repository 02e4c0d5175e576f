// Connection: the transport connection to rgpud, its handshake and its receive side.
#include "connection.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"
#include "rgpu/protocol/auth.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/transport/sealed.h"

namespace rgpu::shim {
namespace {

namespace auth = protocol::auth;

std::string program_name() {
  char buf[512];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string("?");
}

std::string speaks(protocol::VersionRange range) {
  return std::string(range.min == range.max ? "protocol version " : "protocol versions ") + range.describe();
}

}  // namespace

// Everything the transport's handlers touch. They share its ownership, so a
// late message or close (a transport that outlives the Connection) finds it
// alive but detached: `gate` is held while a handler runs; the destructor
// takes it to detach the events, so that none runs once it returns.
struct Connection::Inbox {
  struct Waiter {
    bool done = false;
    ArrivedReply arrived;  // in place: no allocation on the reply path
  };
  struct CopyOut {
    void* dst;
    uint64_t size;
    uint64_t stream;
    bool done = false;
    CUresult result = CUDA_SUCCESS;
  };
  struct Handshake {
    transport::Message message;  // the bytes `decoded` reads from
    std::unique_ptr<protocol::Decoded> decoded;
  };

  std::string server;  // for logs

  std::mutex gate;
  bool detached = false;  // gate
  Events events;          // gate
  // A sealed session (transport/sealed.h): checks every message from the
  // server, the welcome first; set before the proof goes out.
  std::unique_ptr<transport::Opener> opener;  // gate

  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Waiter> waiters;     // mu
  std::map<uint64_t, CopyOut> copy_outs;  // mu
  // Handshake messages (challenge, welcome) in arrival order, until the
  // handshake takes them: a server may send two back to back.
  std::deque<Handshake> handshake;  // mu
  std::atomic<bool> failed{false};
  std::atomic<bool> closing{false};  // our own close: not an error to report
  std::string ended;                 // mu: why rgpud ended the session (Envelope.sessionEnded)

  void on_message(transport::Message message);
  void on_copy_done(wire::CopyDone::Reader done, transport::Message& message);
  void on_closed(const Status& why);
};

void Connection::Inbox::on_message(transport::Message message) {
  std::lock_guard<std::mutex> gate_lock(gate);
  if (detached) return;
  if (opener) {
    // In place of the welcome, a refusal comes unsealed (the server refuses
    // before it seals); it ends the connection either way, so it is read.
    bool refusal = false;
    if (opener->opened() == 0) {
      auto plain = protocol::decode(message.header);
      refusal = plain.is_ok() && plain.value()->envelope().isWelcome() &&
                !plain.value()->envelope().getWelcome().getAccepted();
    }
    // A forgery closes the connection (the opener's callback).
    if (!refusal && !opener->open(message).is_ok()) return;
  }
  auto decoded = protocol::decode(message.header);
  if (!decoded.is_ok()) {
    RGPU_WARN("dropping malformed message from server");
    return;
  }
  auto envelope = decoded.value()->envelope();
  switch (envelope.which()) {
    case wire::Envelope::WELCOME:
    case wire::Envelope::CHALLENGE: {
      std::lock_guard<std::mutex> lock(mu);
      handshake.push_back(Handshake{std::move(message), std::move(decoded.value())});
      cv.notify_all();
      return;
    }
    case wire::Envelope::REPLY: {
      const uint64_t id = envelope.getReply().getId();
      std::lock_guard<std::mutex> lock(mu);
      auto it = waiters.find(id);
      if (it == waiters.end()) {
        RGPU_WARN("reply for unknown call id=%llu", static_cast<unsigned long long>(id));
        return;
      }
      it->second.arrived.message = std::move(message);  // the header's bytes do not move
      it->second.arrived.decoded = std::move(decoded.value());
      it->second.done = true;
      cv.notify_all();
      return;
    }
    case wire::Envelope::COPY_DONE:
      on_copy_done(envelope.getCopyDone(), message);
      return;
    case wire::Envelope::DEVICE_OUTPUT: {
      auto text = envelope.getDeviceOutput();
      if (events.device_output) {
        events.device_output(std::string_view(reinterpret_cast<const char*>(text.begin()), text.size()));
      }
      return;
    }
    case wire::Envelope::SESSION_ENDED: {
      std::string why;
      try {  // a text without its NUL throws when read
        auto text = envelope.getSessionEnded();
        why = bounded_reason(std::string_view(text.cStr(), text.size()));
      } catch (const std::exception&) {
        why = "(unreadable)";
      }
      std::lock_guard<std::mutex> lock(mu);
      ended = std::move(why);
      return;
    }
    case wire::Envelope::DEVICE_ERROR: {
      auto text = envelope.getDeviceError();
      if (events.device_error) {
        events.device_error(std::string_view(reinterpret_cast<const char*>(text.begin()), text.size()));
      }
      return;
    }
    case wire::Envelope::HOST_FUNC_CALL:
      if (events.host_func_call) {
        auto call = envelope.getHostFuncCall();
        auto bytes = call.getBytes();
        const auto* at = reinterpret_cast<const std::byte*>(bytes.begin());
        events.host_func_call(call.getId(), std::vector<std::byte>(at, at + bytes.size()));
      }
      return;
    default:
      RGPU_WARN("unexpected message from server kind=%d", static_cast<int>(envelope.which()));
  }
}

void Connection::Inbox::on_copy_done(wire::CopyDone::Reader done, transport::Message& message) {
  CopyOut target{};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = copy_outs.find(done.getId());
    if (it == copy_outs.end()) return;
    target = it->second;
  }
  // The bytes land outside `mu` (a large payload takes a while); the gate
  // keeps the buffer's owner from going away meanwhile.
  CUresult result = static_cast<CUresult>(done.getResult());
  if (result == CUDA_SUCCESS) {
    if (done.getPayloadBytes() > 0 && message.payload && message.payload->size() == target.size) {
      if (!message.payload->receive(target.dst).is_ok()) result = CUDA_ERROR_DEVICE_UNAVAILABLE;
    } else if (done.getBytes().size() == target.size) {
      std::memcpy(target.dst, done.getBytes().begin(), target.size);
    } else if (target.size != 0) {
      result = CUDA_ERROR_UNKNOWN;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = copy_outs.find(done.getId());
  if (it != copy_outs.end()) {
    it->second.done = true;
    it->second.result = result;
  }
  cv.notify_all();
}

void Connection::Inbox::on_closed(const Status& why) {
  if (failed.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mu);
  if (!closing.load() && !ended.empty()) {
    RGPU_ERROR("rgpud ended the session server=%s reason=\"%s\"", server.c_str(), ended.c_str());
  } else if (!closing.load()) {
    RGPU_ERROR("connection to rgpud lost server=%s reason=\"%s\"", server.c_str(), why.to_string().c_str());
  }
  cv.notify_all();
}

Result<std::unique_ptr<Connection>> Connection::open(const ConnectionOptions& options,
                                                     std::shared_ptr<transport::Transport> transport, Events events) {
  std::unique_ptr<Connection> c(new Connection());
  c->transport_ = std::move(transport);
  c->inbox_ = std::make_shared<Inbox>();
  c->inbox_->server = options.server;
  c->inbox_->events = std::move(events);
  // The handlers own the inbox with the Connection (it owns no transport
  // object, so there is no cycle): one that runs after the Connection is
  // gone finds it detached (gate), never freed, and the reply path pays no
  // weak_ptr lock per message.
  transport::ConnectionHandler handler;
  handler.on_message = [inbox = c->inbox_](transport::Connection&, transport::Message m) {
    inbox->on_message(std::move(m));
  };
  handler.on_closed = [inbox = c->inbox_](transport::Connection&, const Status& why) { inbox->on_closed(why); };
  // A server that is still starting (or a connection lost in its wire-up)
  // is tried again, with a growing pause, until the connect timeout: clients
  // and servers are often started together.
  const auto deadline = std::chrono::steady_clock::now() + options.connect_timeout;
  auto pause = std::chrono::milliseconds(20);
  auto connection = c->transport_->connect(options.server, handler, options.connect_timeout);
  for (int attempt = 2; !connection.is_ok(); ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= pause) {
      return disconnected("cannot reach rgpud at " + options.server + ": " + connection.status().message());
    }
    RGPU_DEBUG("connect retry server=%s attempt=%d reason=\"%s\"", options.server.c_str(), attempt,
               connection.status().message().c_str());
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
    connection = c->transport_->connect(options.server, handler, left - pause);
  }
  c->connection_ = std::move(connection.value());
  if (Status s = c->handshake(options); !s.is_ok()) return s;
  return c;
}

Connection::~Connection() {
  inbox_->closing = true;
  if (connection_) connection_->close();
  {
    // Waits for a handler that is running; later ones find it detached.
    std::lock_guard<std::mutex> gate(inbox_->gate);
    inbox_->detached = true;
    inbox_->events = {};
  }
  connection_.reset();
  transport_.reset();
}

Status Connection::send(transport::Bytes header, transport::Bytes payload) {
  Status s = connection_->send(header, payload);
  if (!s.is_ok()) inbox_->on_closed(s);
  return s;
}

Status Connection::send_then(transport::Bytes header, transport::Bytes payload,
                             const std::function<void()>& on_posted) {
  Status s = connection_->send_then(header, payload, on_posted);
  if (!s.is_ok()) inbox_->on_closed(s);
  return s;
}

bool Connection::failed() const { return inbox_->failed.load(); }

std::string Connection::ended_reason() const {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  return inbox_->ended;
}

void Connection::expect_reply(uint64_t id) {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  inbox_->waiters[id];
}

std::optional<ArrivedReply> Connection::wait_reply(uint64_t id, std::chrono::microseconds poll_budget) {
  Inbox& in = *inbox_;
  auto ready = [&] {
    auto it = in.waiters.find(id);
    return it == in.waiters.end() || it->second.done || in.failed.load();
  };
  if (poll_budget.count() > 0) {
    // Poll for the reply on this thread; its handler runs here too.
    connection_->poll_until(
        [&] {
          std::lock_guard<std::mutex> lock(in.mu);
          return ready();
        },
        poll_budget);
  }
  std::unique_lock<std::mutex> lock(in.mu);
  in.cv.wait(lock, ready);
  auto it = in.waiters.find(id);
  if (it == in.waiters.end()) return std::nullopt;
  std::optional<ArrivedReply> arrived;
  if (it->second.done) arrived.emplace(std::move(it->second.arrived));
  in.waiters.erase(it);
  return arrived;
}

void Connection::expect_copy_out(uint64_t id, void* dst, uint64_t size, uint64_t stream) {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  inbox_->copy_outs[id] = Inbox::CopyOut{dst, size, stream};
}

CUresult Connection::wait_copy_outs(uint64_t stream) {
  Inbox& in = *inbox_;
  std::unique_lock<std::mutex> lock(in.mu);
  const uint64_t horizon = in.copy_outs.empty() ? 0 : in.copy_outs.rbegin()->first;
  auto pending = [&] {
    for (auto& [id, c] : in.copy_outs) {
      if (id > horizon) break;
      if (!c.done && (stream == kAnyStream || c.stream == stream)) return true;
    }
    return false;
  };
  in.cv.wait(lock, [&] { return !pending() || in.failed.load(); });
  CUresult first = in.failed.load() && pending() ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
  for (auto it = in.copy_outs.begin(); it != in.copy_outs.end();) {
    if (it->second.done) {
      if (first == CUDA_SUCCESS) first = it->second.result;
      it = in.copy_outs.erase(it);
    } else {
      ++it;
    }
  }
  return first;
}

bool Connection::copy_outs_pending(uint64_t stream) {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  for (auto& [id, c] : inbox_->copy_outs) {
    if (!c.done && (stream == kAnyStream || c.stream == stream)) return true;
  }
  return false;
}

void Connection::wait_copy_outs_before(uint64_t id, uint64_t stream) {
  const bool legacy = stream == protocol::kNullStream || stream == protocol::kLegacyStream;
  Inbox& in = *inbox_;
  std::unique_lock<std::mutex> lock(in.mu);
  in.cv.wait(lock, [&] {
    if (in.failed.load()) return true;
    for (auto& [cid, c] : in.copy_outs) {
      if (cid >= id) break;
      if (!c.done && (legacy || c.stream == stream)) return false;
    }
    return true;
  });
}

Status Connection::handshake(const ConnectionOptions& options) {
  auto client_nonce = auth::random_nonce();
  if (!client_nonce.is_ok()) return client_nonce.status();
  const bool admin = options.admin.has_value();
  const std::string tenant = admin                    ? auth::kAdminIdentity
                             : options.tenant.empty() ? auth::kDefaultTenant
                                                      : options.tenant;
  {
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    auto hello = builder.initRoot<wire::Envelope>().initHello();
    hello.setProtocolVersion(options.versions.max);
    hello.setMinProtocolVersion(options.versions.min);
    hello.setFeatures(options.features);
    hello.setIntegrity(options.integrity == protocol::IntegrityMode::kOn);
    hello.setClientBuild(RGPU_VERSION_STRING);
    hello.setPid(static_cast<uint32_t>(getpid()));
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    hello.setHostname(host);
    hello.setProgram(program_name());
    if (admin) {
      protocol::write_admin_request(*options.admin, hello.initAdmin());
    } else {
      hello.setTenant(tenant);
    }
    hello.setClientNonce(kj::arrayPtr(client_nonce.value().data(), client_nonce.value().size()));
    auto request = hello.initRequest();
    request.setDevices(options.request.devices);
    request.setMemoryBytes(options.request.memory_bytes);
    request.setLeaseSeconds(options.request.lease_seconds);
    if (!options.request.lease.empty()) request.setLease(options.request.lease);
    request.setComputeShare(options.request.share);
    auto words = protocol::encode(builder);
    if (Status s = send(protocol::as_bytes(words)); !s.is_ok()) return s;
  }
  const std::string where = "rgpud at " + options.server;
  const auto deadline = std::chrono::steady_clock::now() + options.connect_timeout;
  auth::Nonce server_nonce{};
  bool challenged = false;
  std::optional<auth::SealKeys> seal;
  for (;;) {
    Inbox::Handshake next;
    {
      std::unique_lock<std::mutex> lock(inbox_->mu);
      auto arrived = [&] { return !inbox_->handshake.empty() || inbox_->failed.load(); };
      if (!inbox_->cv.wait_until(lock, deadline, arrived) || inbox_->handshake.empty()) {
        return disconnected(where + " did not answer the handshake");
      }
      next = std::move(inbox_->handshake.front());
      inbox_->handshake.pop_front();
    }
    auto envelope = next.decoded->envelope();
    if (envelope.isChallenge()) {
      auto nonce = envelope.getChallenge().getServerNonce();
      if (challenged || nonce.size() != server_nonce.size()) return rgpu::failed(where + " sent a malformed challenge");
      if (options.auth_token.empty() && admin) {
        return rgpu::failed(where + " wants the admin key: set RGPU_ADMIN_KEY_FILE");
      }
      if (options.auth_token.empty()) {
        return rgpu::failed(where + " requires authentication: set RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE (and "
                                    "RGPU_TENANT when the key is not the default tenant's)");
      }
      challenged = true;
      std::memcpy(server_nonce.data(), nonce.begin(), server_nonce.size());
      if (envelope.getChallenge().getIntegrity()) {
        seal = auth::seal_keys(options.auth_token, tenant, client_nonce.value(), server_nonce);
        std::weak_ptr<transport::Connection> raw = connection_;  // closed on a forgery
        auto opener = std::make_unique<transport::Opener>(seal->server_to_client, [raw, where](const Status& why) {
          RGPU_ERROR("closing the session with %s: %s", where.c_str(), why.message().c_str());
          if (auto c = raw.lock()) c->close();
        });
        std::lock_guard<std::mutex> gate(inbox_->gate);
        inbox_->opener = std::move(opener);
      } else if (options.integrity == protocol::IntegrityMode::kOn) {
        return rgpu::failed(where + " does not seal the session, and RGPU_INTEGRITY=on insists on per-message "
                                    "integrity; refusing to use it");
      }
      const auth::Proof proof = auth::client_proof(options.auth_token, tenant, client_nonce.value(), server_nonce);
      capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
      builder.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
      auto words = protocol::encode(builder);
      if (Status s = send(protocol::as_bytes(words)); !s.is_ok()) return s;
      continue;
    }
    auto welcome = envelope.getWelcome();
    // A server from before version ranges states only its one version.
    const protocol::VersionRange server_versions =
        protocol::stated_range(welcome.getMaxProtocolVersion() != 0 ? welcome.getMaxProtocolVersion()
                                                                     : welcome.getProtocolVersion(),
                               welcome.getMinProtocolVersion());
    const std::string both = "this client speaks " + speaks(options.versions) + ", the server " +
                             speaks(server_versions);
    if (!welcome.getAccepted()) {
      std::string why = where + (admin ? " refused the request: " : " refused the session: ") + welcome.getRefusal().cStr();
      if (!protocol::highest_common(options.versions, server_versions)) why += " (" + both + ")";
      return rgpu::failed(why);
    }
    if (!options.versions.contains(welcome.getProtocolVersion())) {
      return rgpu::failed(where + " chose protocol version " + std::to_string(welcome.getProtocolVersion()) +
                          ", which this client does not speak (" + both + ")");
    }
    if (!options.auth_token.empty()) {
      // A client that holds a key talks only to a server that proves it
      // holds the key too: anyone can listen on an address and say welcome.
      const auth::Proof expected = auth::server_proof(options.auth_token, tenant, client_nonce.value(), server_nonce);
      auto proof = welcome.getServerProof();
      if (!challenged || !auth::equal_constant_time(std::span<const uint8_t>(proof.begin(), proof.size()), expected)) {
        return rgpu::failed(where + " did not prove that it holds the key (wrong server, or one without "
                                    "authentication); refusing to use it");
      }
    }
    if (options.integrity == protocol::IntegrityMode::kOn && !seal) {
      return rgpu::failed(where + " welcomed the session unsealed, and RGPU_INTEGRITY=on insists on per-message "
                                  "integrity; refusing to use it");
    }
    SessionInfo& s = session_;
    if (admin) {
      // An operator is answered by a server that proved the admin key.
      if (options.auth_token.empty() || !challenged) {
        return rgpu::failed(where + " answered an operator request without the admin key");
      }
      if (!welcome.hasAdmin()) {
        return rgpu::failed(where + " does not answer operator requests (an rgpud older than this CLI?)");
      }
      auto listed = protocol::read_sessions(welcome.getAdmin());
      if (!listed.is_ok()) return rgpu::failed(where + " sent a malformed answer: " + listed.status().message());
      s.listed = std::move(listed.value());
      s.server_build = welcome.getServerBuild();
      s.sealed = seal.has_value();
      return Status::ok();
    }
    s.sealed = seal.has_value();
    s.session_id = welcome.getSessionId();
    s.server_build = welcome.getServerBuild();
    s.tenant = welcome.getTenant();
    s.protocol_version = welcome.getProtocolVersion();
    s.server_versions = server_versions;
    s.features = welcome.getFeatures() & options.features;  // never one this side lacks
    auto granted = welcome.getGranted();
    s.granted.devices = granted.getDevices();
    s.granted.memory_bytes = granted.getMemoryBytes();
    s.granted.lease_seconds = granted.getLeaseSeconds();
    s.granted.lease = granted.getLease();
    s.granted.share = granted.getComputeShare();
    s.driver_version = welcome.getDriverVersion();
    s.copy_pipeline_chunk = welcome.getCopyPipelineChunk();
    for (auto d : welcome.getDevices()) {
      DeviceInfo info;
      static_cast<protocol::DeviceDescription&>(info) = protocol::read_device(d);
      info.server_ordinal = static_cast<int>(s.devices.size());
      s.devices.push_back(std::move(info));
    }
    // A grant of fewer devices than asked would leave the program short; the
    // server refuses such a request, so this is a server that did not read it.
    if (options.request.devices != 0 && s.granted.devices != 0 && s.granted.devices < options.request.devices) {
      return rgpu::failed(where + " granted " + std::to_string(s.granted.devices) + " devices, " +
                          std::to_string(options.request.devices) + " were asked for");
    }
    break;
  }
  // From here every message to the server is sealed too.
  if (seal) connection_ = transport::seal(connection_, seal->client_to_server);
  RGPU_INFO("connected server=%s tenant=%s protocol=%u server_protocols=%u-%u server_build=\"%s\" features=0x%llx "
            "devices=%zu sealed=%s",
            options.server.c_str(), tenant.c_str(), session_.protocol_version, session_.server_versions.min,
            session_.server_versions.max, session_.server_build.c_str(),
            static_cast<unsigned long long>(session_.features), session_.devices.size(), seal ? "yes" : "no");
  return Status::ok();
}

}  // namespace rgpu::shim
