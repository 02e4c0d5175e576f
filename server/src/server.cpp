// Server: driver start-up, the listener and the session registry.
#include "rgpu/server/server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "rgpu/common/callback_gate.h"
#include "rgpu/common/log.h"
#include "rgpu/common/thread_set.h"
#include "rgpu/transport/sealed.h"
#include "handshake.h"
#include "pool_gate.h"
#include "reaper.h"
#include "server_collectors.h"
#include "session.h"
#include "slices.h"

namespace rgpu::server {
namespace {

Result<std::shared_ptr<const ServerInfo>> query_devices(const DriverTable& cu, const ServerOptions& options) {
  CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) return failed("cuInit failed with " + std::to_string(r) + " in " + cu.path);
  auto info = std::make_shared<ServerInfo>();
  info->build = RGPU_VERSION_STRING;
  info->limits = options.limits;
  // Libraries load on a session's first call of theirs; only where from is
  // decided here, once, by the device kind.
  info->libraries = std::make_shared<LibraryTables>(cu.cpu_device(), options.libraries);
  cu.cuDriverGetVersion(&info->driver_version);
  int count = 0;
  if ((r = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS) return failed("cuDeviceGetCount failed");
  if (count == 0) return failed("the driver in " + cu.path + " reports no devices");
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS) return failed("cuDeviceGet failed for device " + std::to_string(i));
    ServerInfo::Device d;
    char name[256] = {};
    cu.cuDeviceGetName(name, sizeof name - 1, dev);
    d.name = name;
    cu.cuDeviceGetUuid(&d.uuid, dev);
    size_t total = 0;
    cu.cuDeviceTotalMem(&total, dev);
    d.total_mem = total;
    d.attributes.assign(CU_DEVICE_ATTRIBUTE_MAX, 0);
    d.attribute_missing.assign(CU_DEVICE_ATTRIBUTE_MAX, true);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
      int v = 0;
      if (cu.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), dev) == CUDA_SUCCESS) {
        d.attributes[a] = v;
        d.attribute_missing[a] = false;
      }
    }
    d.ptx_only = cu.cpu_device();
    info->fair_shares.push_back(std::make_shared<FairShare>(&FairShare::steady_now));
    RGPU_INFO("device index=%d name=\"%s\" memory=%zu", i, d.name.c_str(), total);
    info->devices.push_back(std::move(d));
  }
  return std::shared_ptr<const ServerInfo>(std::move(info));
}

// What a session may ask for at most: as many devices as there are slices,
// and at most `session_memory` bytes on each (0: no limit) or, with
// configured slices, the largest slice. The slice table decides the rest
// when the session is admitted.
Offer make_offer(const SliceTable& slices, uint64_t session_memory, LeaseGate* gate,
                 protocol::IntegrityMode integrity, const std::optional<std::string>& admin_key) {
  Offer offer;
  offer.lease_gate = gate;
  offer.integrity = integrity;
  offer.admin_key = admin_key ? &*admin_key : nullptr;
  const auto slots = slices.slots();
  offer.devices = static_cast<uint32_t>(slots.size());
  for (const auto& s : slots) offer.device_memory = std::max(offer.device_memory, s.memory);
  offer.memory_limit = slices.sliced() ? 0 : session_memory;
  return offer;
}

// Whether a connection's peer is on this host: a loopback address, or this
// process (the in-process transport). --integrity auto leaves those unsealed.
bool local_peer(const std::string& peer) {
  if (peer.rfind("inproc:", 0) == 0) return true;
  std::string host;
  uint16_t port = 0;
  return transport::split_host_port(peer, &host, &port) && protocol::auth::is_loopback_host(host);
}

// The grant's summary of a session's placements: the smallest quota (0 when
// any device has none) and the smallest share of a configured slice (0: only
// whole devices).
void summarize(const std::vector<Placement>& devices, Resources* granted) {
  granted->devices = static_cast<uint32_t>(devices.size());
  granted->memory_bytes = devices.empty() ? 0 : UINT64_MAX;
  granted->share = 0;
  for (const Placement& p : devices) {
    granted->memory_bytes = std::min(granted->memory_bytes, p.quota);
    if (p.slice >= 0) granted->share = granted->share == 0 ? p.share : std::min(granted->share, p.share);
  }
}

// One accepted connection: its handshake until it is welcomed, then its
// session. The transport hands one connection's messages over one at a time;
// the gatekeeper thread reads `deadline`, so the fields are under `mu`.
struct Peer {
  Peer(uint64_t id, std::shared_ptr<transport::Connection> connection, Handshake handshake,
       std::chrono::steady_clock::time_point deadline)
      : id(id), connection(std::move(connection)), handshake(std::move(handshake)), deadline(deadline) {}
  const uint64_t id;
  const std::shared_ptr<transport::Connection> connection;
  std::mutex mu;
  Handshake handshake;
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<Session> session;  // once welcomed
  bool done = false;                  // closed, or refused
  // Once welcomed into a sealed session (transport/sealed.h): what sends to
  // the client (the sealing connection) and what checks its messages (used
  // by the one handler at a time only).
  std::shared_ptr<transport::Connection> sender;
  std::shared_ptr<transport::Opener> opener;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(std::shared_ptr<const DriverTable> driver, std::shared_ptr<const ServerInfo> info,
             std::shared_ptr<transport::Transport> transport, std::shared_ptr<ModuleCache> module_cache,
             protocol::auth::KeyRing keys, uint64_t session_memory, std::shared_ptr<SliceTable> slices,
             std::unique_ptr<PoolLeaseGate> gate, std::function<void(uint64_t)> on_lease_end,
             metrics::Registry* registry, protocol::IntegrityMode integrity, std::optional<std::string> admin_key)
      : driver_(std::move(driver)),
        info_(std::move(info)),
        limits_(info_->limits),
        slices_(std::move(slices)),
        gate_(std::move(gate)),
        on_lease_end_(std::move(on_lease_end)),
        admin_key_(std::move(admin_key)),
        offer_(make_offer(*slices_, session_memory, gate_.get(), integrity, admin_key_)),
        keys_(std::move(keys)),
        transport_(std::move(transport)),
        module_cache_(std::move(module_cache)) {
    gatekeeper_ = std::thread([this] { run_gatekeeper(); });
    if (registry != nullptr) collections_ = collect_server(*registry, info_, driver_, [this] { return view(); });
  }

  ~ServerImpl() override {
    collections_.clear();  // no scrape reads this server from here on
    listener_.reset();
    // The transport may be shared and outlive this server: its handlers for
    // our connections finish here and do nothing from now on.
    callbacks_->close();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    gate_cv_.notify_all();
    if (gatekeeper_.joinable()) gatekeeper_.join();
    std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions;
    std::unordered_map<uint64_t, std::shared_ptr<Peer>> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions.swap(sessions_);
      pending.swap(pending_);
      peers_.clear();
    }
    for (auto& [id, p] : pending) p->connection->close();
    for (auto& [id, s] : sessions) s->close();
    sessions.clear();
    // Connections go with the transport; no more callbacks after this.
    transport_.reset();
    reapers_.join_all();
  }

  Status listen(const std::string& address) {
    auto listener = transport_->listen(address, [this, gate = callbacks_](std::shared_ptr<transport::Connection> c) {
      CallbackGate::Pass pass(*gate);
      if (!pass.entered()) {
        c->close();
        return transport::ConnectionHandler{};
      }
      return accept(std::move(c));
    });
    if (!listener.is_ok()) return listener.status();
    listener_ = std::move(listener.value());
    return Status::ok();
  }

  std::string address() const override { return listener_ ? listener_->address() : ""; }
  size_t session_count() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }
  size_t pending_count() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
  }

  std::string pool_id() const override { return gate_ ? gate_->server_id() : ""; }
  void set_pool_id(std::string id) {
    if (gate_) gate_->set_server_id(std::move(id));
  }

  std::vector<PoolDevice> pool_devices() const override {
    std::vector<PoolDevice> out;
    for (size_t i = 0; i < info_->devices.size(); ++i) {
      const auto& d = info_->devices[i];
      PoolDevice p;
      p.index = static_cast<uint32_t>(i);
      p.name = d.name;
      p.cpu = d.ptx_only;
      auto attr = [&](int a) { return a < static_cast<int>(d.attributes.size()) ? d.attributes[a] : 0; };
      p.compute_capability = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                                                   attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
      p.memory = d.total_mem;
      for (const auto& s : slices_->slots()) {
        if (s.device == i && s.index >= 0) p.slices.push_back(PoolSlice{s.memory, s.share, s.max_sessions});
      }
      if (driver_->rgpuDeviceGetUtilization) {
        unsigned gpu = 0, mem = 0;
        CUdevice dev = 0;
        if (driver_->cuDeviceGet(&dev, static_cast<int>(i)) == CUDA_SUCCESS &&
            driver_->rgpuDeviceGetUtilization(&gpu, &mem, dev) == CUDA_SUCCESS) {
          p.utilization = std::min(1.0, gpu / 100.0);
        }
      }
      out.push_back(std::move(p));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) {
      for (const Placement& place : session->client().terms.devices) {
        if (place.device < out.size()) out[place.device].memory_reserved += place.quota;
      }
    }
    return out;
  }

  void end_lease(uint64_t lease, const std::string& why) override {
    // Refused from now on, before its sessions go: one presented meanwhile
    // must not slip in behind them.
    if (gate_) gate_->revoke(lease);
    std::vector<std::shared_ptr<Peer>> ending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, session] : sessions_) {
        const auto& held = session->client().terms.lease;
        if (!held || held->id != lease) continue;
        if (auto p = peers_.find(id); p != peers_.end()) ending.push_back(p->second);
      }
    }
    for (auto& peer : ending) {
      RGPU_WARN("session ended by the pool id=%llu lease=%llu reason=%s", static_cast<unsigned long long>(peer->id),
                static_cast<unsigned long long>(lease), why.c_str());
      const std::string text = why == "preempted"
                                   ? "rgpu: the pool preempted this program's lease " + std::to_string(lease) +
                                         " for a request of higher priority; its session on this server is closed\n"
                                   : "rgpu: the pool ended this program's lease " + std::to_string(lease) + " (" +
                                         why + "); its session on this server is closed\n";
      capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
      builder.initRoot<wire::Envelope>().setDeviceError(
          kj::arrayPtr(reinterpret_cast<const capnp::byte*>(text.data()), text.size()));
      auto words = protocol::encode(builder);
      std::shared_ptr<transport::Connection> sender;
      {
        std::lock_guard<std::mutex> lock(peer->mu);
        sender = peer->sender ? peer->sender : peer->connection;
      }
      (void)sender->send(protocol::as_bytes(words));
      // Closed a moment later, so the notice is delivered before the close.
      reapers_.post([peer] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        peer->connection->close();
      });
    }
  }

 private:
  // A new connection gets a handshake, a deadline and strict receive limits,
  // and nothing else: no session, thread or buffer until it is welcomed.
  transport::ConnectionHandler accept(std::shared_ptr<transport::Connection> connection) {
    transport::ReceiveLimits strict;
    strict.max_header = limits_.max_hello_bytes;
    strict.max_parked_frames = 4;
    strict.max_parked_bytes = 4 * limits_.max_hello_bytes;
    connection->set_receive_limits(strict);
    const uint64_t id = next_id_.fetch_add(1);
    auto peer = std::make_shared<Peer>(id, connection,
                                       Handshake(keys_, limits_.max_hello_bytes, offer_, local_peer(connection->peer())),
                                       std::chrono::steady_clock::now() + limits_.hello_timeout);
    bool room;
    {
      std::lock_guard<std::mutex> lock(mu_);
      room = pending_.size() < limits_.max_unauthenticated;
      if (room) {
        pending_[id] = peer;
        peers_[id] = peer;
      }
    }
    transport::ConnectionHandler handler;
    handler.on_closed = [this, id, gate = callbacks_](transport::Connection&, const Status& why) {
      CallbackGate::Pass pass(*gate);
      if (pass.entered()) end_peer(id, why);
    };
    if (!room) {
      if (info_->metrics) info_->metrics->refused.with({"unauthenticated_limit"}).add();
      RGPU_WARN("connection refused peer=%s reason=\"too many unauthenticated connections (limit %zu)\"",
                connection->peer().c_str(), limits_.max_unauthenticated);
      connection->close();
      return handler;
    }
    RGPU_DEBUG("connection open id=%llu peer=%s", static_cast<unsigned long long>(id), connection->peer().c_str());
    std::weak_ptr<Peer> weak = peer;
    handler.on_message = [this, weak, gate = callbacks_](transport::Connection&, transport::Message message) {
      CallbackGate::Pass pass(*gate);
      if (!pass.entered()) return;
      if (auto p = weak.lock()) on_message(*p, std::move(message));
    };
    return handler;
  }

  void on_message(Peer& peer, transport::Message message) {
    std::shared_ptr<Session> session;
    std::shared_ptr<transport::Opener> opener;
    {
      std::lock_guard<std::mutex> lock(peer.mu);
      if (peer.done) return;
      session = peer.session;
      opener = peer.opener;
    }
    if (session) {
      // A forgery closes the connection (the opener's callback), which ends the session.
      if (opener && !opener->open(message).is_ok()) return;
      session->post(std::move(message));  // the session's own exception barrier
      return;
    }
    Handshake::Step step;
    try {
      std::lock_guard<std::mutex> lock(peer.mu);
      step = peer.handshake.on_message(message.header, message.payload != nullptr);
    } catch (const std::exception& e) {  // bad_alloc: the handshake itself never throws otherwise
      step.kind = Handshake::Step::Kind::kRefuse;
      step.reason = std::string("server error: ") + e.what();
      step.message = Handshake::refusal(step.reason);
    }
    switch (step.kind) {
      case Handshake::Step::Kind::kSend:
        (void)peer.connection->send(step.message);
        return;
      case Handshake::Step::Kind::kRefuse:
        refuse(peer, step.reason, step.message);
        return;
      case Handshake::Step::Kind::kWelcome:
        admit(peer, std::move(step));
        return;
      case Handshake::Step::Kind::kAdmin:
        answer_admin(peer, step);
        return;
    }
  }

  // An operator proved the admin key: its answer goes in a welcome (sealed
  // as a session's would be; a request that cannot be done, in a refusing
  // one), and the connection holds nothing more. The operator closes it;
  // else the handshake's deadline does.
  void answer_admin(Peer& peer, const Handshake::Step& step) {
    const protocol::AdminRequest& request = step.admin;
    RGPU_INFO("operator request id=%llu peer=%s host=%s program=%s command=%s session=%llu",
              static_cast<unsigned long long>(peer.id), peer.connection->peer().c_str(),
              step.client.hostname.c_str(), step.client.program.c_str(), protocol::command_name(request.command),
              static_cast<unsigned long long>(request.session));
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    auto welcome = builder.initRoot<wire::Envelope>().initWelcome();
    welcome.setServerBuild(RGPU_VERSION_STRING);
    welcome.setProtocolVersion(step.client.terms.version);
    welcome.setMinProtocolVersion(offer_.versions.min);
    welcome.setMaxProtocolVersion(offer_.versions.max);
    welcome.setTenant(step.client.tenant);
    welcome.setServerProof(kj::arrayPtr(step.server_proof.data(), step.server_proof.size()));
    welcome.setAccepted(true);
    const auto now = std::chrono::steady_clock::now();
    switch (request.command) {
      case protocol::AdminCommand::kListSessions: {
        std::vector<protocol::SessionSummary> all;
        for (const auto& session : view().sessions) all.push_back(summary(*session, now));
        protocol::write_sessions(all, welcome.initAdmin());
        break;
      }
      case protocol::AdminCommand::kEndSession: {
        std::shared_ptr<Session> session;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (auto it = sessions_.find(request.session); it != sessions_.end()) session = it->second;
        }
        if (!session) {
          welcome.setAccepted(false);
          welcome.setRefusal("no session " + std::to_string(request.session) + " on this server");
          break;
        }
        protocol::write_sessions({summary(*session, now)}, welcome.initAdmin());
        RGPU_WARN("session %llu ended by an operator (peer=%s)", static_cast<unsigned long long>(request.session),
                  peer.connection->peer().c_str());
        session->end("ended by an operator (rgpu session end)");
        break;
      }
    }
    if (info_->metrics) {
      info_->metrics->operator_requests
          .with({protocol::command_name(request.command), welcome.getAccepted() ? "done" : "refused"})
          .add();
    }
    auto words = protocol::encode(builder);
    std::shared_ptr<transport::Connection> sender = peer.connection;
    if (step.seal) sender = transport::seal(peer.connection, step.seal->server_to_client);
    if (Status s = sender->send(protocol::as_bytes(words)); !s.is_ok()) peer.connection->close();
  }

  // A session as `rgpu session list` shows it.
  static protocol::SessionSummary summary(const Session& session, std::chrono::steady_clock::time_point now) {
    protocol::SessionSummary s;
    const ClientIdentity& client = session.client();
    s.id = session.id();
    s.tenant = client.tenant;
    s.hostname = client.hostname;
    s.program = client.program;
    s.pid = client.pid;
    for (const Placement& p : session.placements()) s.devices.push_back(p.device);
    s.memory_bytes = session.memory_held();
    s.age_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - session.opened()).count());
    s.calls = session.metrics().calls();
    s.lease = client.terms.lease ? client.terms.lease->id : 0;
    return s;
  }

  // `category` names the reason in metrics (rgpu_connections_refused_total).
  void refuse(Peer& peer, const std::string& reason, const std::vector<std::byte>& message,
              const char* category = "handshake") {
    if (info_->metrics) info_->metrics->refused.with({category}).add();
    {
      std::lock_guard<std::mutex> lock(peer.mu);
      if (peer.done) return;
      peer.done = true;
    }
    RGPU_WARN("connection refused id=%llu peer=%s reason=\"%s\"", static_cast<unsigned long long>(peer.id),
              peer.connection->peer().c_str(), reason.c_str());
    if (!message.empty()) (void)peer.connection->send(message);
    peer.connection->close();
  }

  void admit(Peer& peer, Handshake::Step step) {
    bool full;
    {
      std::lock_guard<std::mutex> lock(mu_);
      full = sessions_.size() >= limits_.max_sessions;
    }
    if (full) {
      const std::string why = "server full: " + std::to_string(limits_.max_sessions) + " sessions";
      refuse(peer, why, Handshake::refusal(why), "full");
      return;
    }
    // Free slices that fit the request (in pool mode: exactly the lease's),
    // held until the session is gone.
    const auto& lease = step.client.terms.lease;
    auto admitted = lease ? slices_->admit_leased(lease->slices) : slices_->admit(step.client.terms.requested);
    if (!admitted.is_ok()) {
      const std::string why = "cannot grant the request: " + admitted.status().message();
      refuse(peer, why, Handshake::refusal(why), "no_slice");
      return;
    }
    step.client.terms.devices = std::move(admitted.value().first);
    summarize(step.client.terms.devices, &step.client.terms.granted);
    // Only an authenticated peer gets the limits a session needs.
    transport::ReceiveLimits open;
    open.max_header = limits_.max_message_bytes;
    open.max_parked_frames = limits_.max_parked_frames;
    open.max_parked_bytes = limits_.max_parked_bytes;
    peer.connection->set_receive_limits(open);
    // A sealed session sends through the sealing and checks what arrives:
    // the welcome is its first sealed message, the client's next call the
    // first it checks.
    std::shared_ptr<transport::Connection> sender = peer.connection;
    std::shared_ptr<transport::Opener> opener;
    if (step.seal) {
      sender = transport::seal(peer.connection, step.seal->server_to_client);
      std::weak_ptr<transport::Connection> raw = peer.connection;
      opener = std::make_shared<transport::Opener>(
          step.seal->client_to_server, [raw, id = peer.id, info = info_](const Status& why) {
            if (info->metrics) info->metrics->refused.with({"integrity"}).add();
            auto c = raw.lock();
            RGPU_WARN("session ended id=%llu peer=%s reason=\"%s\"", static_cast<unsigned long long>(id),
                      c ? c->peer().c_str() : "?", why.message().c_str());
            if (c) c->close();
          });
    }
    auto session = std::make_shared<Session>(peer.id, std::move(step.client), driver_, info_, module_cache_, sender,
                                             std::move(admitted.value().second));
    if (info_->metrics) info_->metrics->sessions_opened.with({session->client().tenant}).add();
    session->welcome(step.server_proof);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.erase(peer.id);
      sessions_[peer.id] = session;
    }
    std::lock_guard<std::mutex> lock(peer.mu);
    peer.session = std::move(session);
    peer.sender = std::move(sender);
    peer.opener = std::move(opener);
  }

  // The connection closed: a pending peer is forgotten, a session torn down
  // off the transport's thread (freeing a session waits for its device work).
  void end_peer(uint64_t id, const Status& why) {
    std::shared_ptr<Session> session;
    std::shared_ptr<Peer> peer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.erase(id);
      if (auto it = peers_.find(id); it != peers_.end()) {
        peer = std::move(it->second);
        peers_.erase(it);
      }
      if (auto it = sessions_.find(id); it != sessions_.end()) {
        session = std::move(it->second);
        sessions_.erase(it);
      }
    }
    if (peer) {
      std::lock_guard<std::mutex> lock(peer->mu);
      peer->done = true;
    }
    if (!session) return;
    RGPU_INFO("session ending id=%llu tenant=%s reason=\"%s\"", static_cast<unsigned long long>(id),
              session->client().tenant.c_str(), why.to_string().c_str());
    session->close();
    if (const auto& lease = session->client().terms.lease; lease && on_lease_end_) on_lease_end_(lease->id);
    reapers_.post([s = std::move(session)]() mutable {
      // Let any in-flight callback drop its temporary reference first.
      for (int i = 0; i < 5000 && s.use_count() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      s.reset();
    });
  }

  // Closes connections that have not finished their handshake in time.
  void run_gatekeeper() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      gate_cv_.wait_for(lock, std::chrono::milliseconds(100));
      const auto now = std::chrono::steady_clock::now();
      std::vector<std::shared_ptr<Peer>> expired;
      for (auto& [id, peer] : pending_) {
        std::lock_guard<std::mutex> peer_lock(peer->mu);
        if (!peer->done && !peer->session && peer->deadline <= now) expired.push_back(peer);
      }
      // Sessions whose clients have left a reply untaken too long.
      std::vector<std::shared_ptr<Session>> stalled;
      for (auto& [id, session] : sessions_) {
        if (session->oldest_untaken_reply() < now - limits_.reply_timeout) stalled.push_back(session);
      }
      lock.unlock();
      for (auto& peer : expired) {
        const std::string why = "no complete handshake within " + std::to_string(limits_.hello_timeout.count()) + " ms";
        refuse(*peer, why, Handshake::refusal(why), "timeout");
      }
      expired.clear();
      for (auto& session : stalled) {
        session->end("the client took no reply's bytes for " + std::to_string(limits_.reply_timeout.count()) +
                     " ms (--limit reply-timeout-ms)");
      }
      stalled.clear();
      lock.lock();
    }
  }

  // What a scrape reads: the slices and the sessions, by id.
  ServerView view() const {
    ServerView v;
    v.slots = slices_->slots();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, s] : sessions_) v.sessions.push_back(s);
    }
    std::sort(v.sessions.begin(), v.sessions.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
    return v;
  }

  const std::shared_ptr<const DriverTable> driver_;
  const std::shared_ptr<const ServerInfo> info_;
  const ServerLimits& limits_;
  const std::shared_ptr<SliceTable> slices_;
  const std::unique_ptr<PoolLeaseGate> gate_;  // pool mode only
  const std::function<void(uint64_t)> on_lease_end_;
  const std::optional<std::string> admin_key_;  // --admin-key-file; before offer_, which points to it
  const Offer offer_;
  const protocol::auth::KeyRing keys_;
  std::shared_ptr<transport::Transport> transport_;
  const std::shared_ptr<ModuleCache> module_cache_;
  // Every transport callback runs through it (see the destructor).
  const std::shared_ptr<CallbackGate> callbacks_ = std::make_shared<CallbackGate>();
  std::unique_ptr<transport::Listener> listener_;
  mutable std::mutex mu_;
  std::condition_variable gate_cv_;
  bool stopping_ = false;
  // Every open connection's peer (the handlers hold weak references), and
  // those of them still in their handshake.
  std::unordered_map<uint64_t, std::shared_ptr<Peer>> peers_;
  std::unordered_map<uint64_t, std::shared_ptr<Peer>> pending_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  // Tears down ended sessions, on at most a few threads at once.
  static constexpr size_t kReaperThreads = 2;
  Reaper reapers_{kReaperThreads};
  std::atomic<uint64_t> next_id_{1};
  std::thread gatekeeper_;
  std::vector<metrics::Collection> collections_;  // the scrape-time families, while the server lives
};

// The slices of --slices, checked against the devices, each logged once.
Result<std::shared_ptr<SliceTable>> make_slices(const ServerInfo& info, const ServerOptions& options) {
  SharingOptions sharing;
  for (const std::string& text : options.slices) {
    auto cut = parse_slicing(text);
    if (!cut.is_ok()) return cut.status();
    sharing.slicing.push_back(std::move(cut.value()));
  }
  sharing.max_sessions_per_slice = options.max_sessions_per_slice;
  sharing.session_memory = options.session_memory;
  std::vector<uint64_t> memory;
  for (const auto& d : info.devices) memory.push_back(d.total_mem);
  auto table = SliceTable::make(memory, sharing);
  if (!table.is_ok()) return table.status();
  if (table.value()->sliced()) {
    for (const auto& s : table.value()->slots()) {
      RGPU_INFO("slice %s max_sessions=%u", SliceTable::describe(s).c_str(), s.max_sessions);
    }
  }
  return table;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(std::shared_ptr<const DriverTable> driver,
                                              std::shared_ptr<transport::Transport> transport,
                                              const ServerOptions& options) {
  std::string host;
  uint16_t port = 0;
  if (!transport::split_host_port(options.listen, &host, &port)) {
    return invalid_argument("listen address must be HOST:PORT, got '" + options.listen + "'");
  }
  if (options.keys.empty() && options.integrity == protocol::IntegrityMode::kOn) {
    return invalid_argument("--integrity on needs keys to derive the session keys from: give keys (--auth-file "
                            "FILE or RGPU_AUTH_TOKEN)");
  }
  if (options.keys.empty()) {
    if (!protocol::auth::is_loopback_host(host) && !options.insecure) {
      return invalid_argument("refusing to listen on " + options.listen +
                              " without authentication: give keys (--auth-file FILE or RGPU_AUTH_TOKEN), or "
                              "--insecure to accept any client that can reach this address");
    }
    RGPU_WARN("no authentication: any process that can reach %s may use this server%s", options.listen.c_str(),
              protocol::auth::is_loopback_host(host) ? " (every local user)" : "");
  } else {
    static constexpr const char* kModes[] = {"auto (sessions from other hosts)", "on (every session)", "off"};
    RGPU_INFO("authentication required tenants=%zu integrity=%s", options.keys.size(),
              kModes[static_cast<int>(options.integrity)]);
  }
  auto modules = ModuleCache::open(ModuleCacheOptions{options.module_cache_dir, options.module_cache_memory});
  if (!modules.is_ok()) return modules.status();
  if (!options.module_cache_dir.empty()) {
    RGPU_INFO("module cache dir=%s memory_limit=%llu", options.module_cache_dir.c_str(),
              static_cast<unsigned long long>(options.module_cache_memory));
  }
  auto info = query_devices(*driver, options);
  if (!info.is_ok()) return info.status();
  // One completion poller per device, shared by its sessions (set here, where
  // the driver's owner is at hand, before anything else shares the info).
  std::const_pointer_cast<ServerInfo>(info.value())->pollers = std::make_shared<DevicePollers>(
      driver, info.value()->devices.size(), PollerOptions{std::max<size_t>(1, options.poller_threads)});
  if (options.session_memory != 0) {
    RGPU_INFO("session memory quota bytes=%llu", static_cast<unsigned long long>(options.session_memory));
  }
  if (options.metrics != nullptr) {
    std::const_pointer_cast<ServerInfo>(info.value())->metrics = std::make_shared<ServerMetrics>(*options.metrics);
    options.metrics->gauge("rgpu_build_info", "The running rgpud (value 1): its version and protocol.",
                           {"version", "protocol"})
        .with({RGPU_VERSION_STRING, std::to_string(wire::PROTOCOL_VERSION)})
        .set(1);
  }
  auto slices = make_slices(*info.value(), options);
  if (!slices.is_ok()) return slices.status();
  std::unique_ptr<PoolLeaseGate> gate;
  if (!options.pool_key.empty()) gate = std::make_unique<PoolLeaseGate>(options.pool_key, options.pool_id);
  auto server = std::make_unique<ServerImpl>(std::move(driver), std::move(info.value()), std::move(transport),
                                             std::move(modules.value()), options.keys, options.session_memory,
                                             std::move(slices.value()), std::move(gate),
                                             options.on_lease_session_end, options.metrics, options.integrity,
                                             options.admin_key);
  if (Status s = server->listen(options.listen); !s.is_ok()) return s;
  if (!options.pool_key.empty() && options.pool_id.empty()) server->set_pool_id(server->address());
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace rgpu::server
