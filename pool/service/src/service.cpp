// The pool's event loop: accepts connections, reads frames, hands each
// message to the coordinator and tells clients and servers what changed.
#include "rgpu/pool/service.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <set>

#include "coordinator.h"
#include "rgpu/common/log.h"
#include "rgpu/pool/lease_token.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/wire.h"
#include "status_view.h"

namespace rgpu::pool::service {
namespace {

using poolwire::PoolMessage;

// What one connection may leave unread by its peer before it is closed: a
// status reply of a large pool, with room.
constexpr size_t kMaxPendingOutput = net::kMaxStatusFrame + (size_t{1} << 20);

struct Conn {
  int fd = -1;
  std::string peer;
  net::FrameReader reader;
  std::vector<std::byte> out;
  size_t out_off = 0;
  bool closing = false;  // close once `out` is flushed
  enum class Role { kUnknown, kServer, kClient } role = Role::kUnknown;
  std::string server_id;
  std::set<TicketId> tickets;
  std::set<LeaseId> leases;
};

// Who asked, for status views.
struct Origin {
  std::string program;
  std::string hostname;
};

class ServiceImpl final : public Service {
 public:
  ServiceImpl(ServiceOptions options, int listen_fd, std::string address, int wake_fd,
              std::unique_ptr<Coordinator> core)
      : options_(std::move(options)),
        listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        address_(std::move(address)),
        core_(std::move(core)) {}

  ~ServiceImpl() override {
    for (auto& [id, c] : conns_) close(c.fd);
    close(listen_fd_);
    close(wake_fd_);
  }

  std::string address() const override { return address_; }

  void stop() override {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }

  Status run() override {
    RGPU_INFO("pool serving address=%s policy=%s heartbeat_timeout_ms=%lld", address_.c_str(),
              policy_name(core_->config().policy), static_cast<long long>(core_->config().heartbeat_timeout_ms));
    Millis last_progress = core_->now();
    while (true) {
      std::vector<pollfd> fds;
      std::vector<uint64_t> ids;
      fds.push_back({wake_fd_, POLLIN, 0});
      fds.push_back({listen_fd_, static_cast<short>(conns_.size() < options_.max_connections ? POLLIN : 0), 0});
      for (auto& [id, c] : conns_) {
        short events = c.closing ? 0 : POLLIN;
        if (c.out_off < c.out.size()) events |= POLLOUT;
        fds.push_back({c.fd, events, 0});
        ids.push_back(id);
      }
      const int rc = poll(fds.data(), fds.size(), options_.tick_ms);
      if (rc < 0 && errno != EINTR) return failed(std::string("poll: ") + std::strerror(errno));
      if (fds[0].revents & POLLIN) {
        RGPU_INFO("pool stopping");
        return Status();
      }
      if (fds[1].revents & POLLIN) accept_all();
      for (size_t i = 0; i < ids.size(); ++i) {
        const short re = fds[i + 2].revents;
        if (re == 0) continue;
        auto it = conns_.find(ids[i]);
        if (it == conns_.end()) continue;
        if (re & POLLOUT) flush(it->second);
        if (re & (POLLIN | POLLHUP | POLLERR)) read_from(ids[i]);
      }
      apply(core_->tick());
      const Millis now = core_->now();
      if (now - last_progress >= 1000) {
        last_progress = now;
        send_progress();
        renew_held();
      }
      reap();
    }
  }

 private:
  // ---- connections

  void accept_all() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (conns_.size() >= options_.max_connections) {
        close(fd);
        continue;
      }
      const uint64_t id = next_conn_++;
      Conn& c = conns_[id];
      c.fd = fd;
      c.reader = net::FrameReader(options_.max_frame);
      c.peer = "conn-" + std::to_string(id);
    }
  }

  void read_from(uint64_t id) {
    std::byte buf[16384];
    while (true) {
      auto it = conns_.find(id);
      if (it == conns_.end()) return;
      Conn& c = it->second;
      if (c.closing) return;
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        drop(id, "closed by peer");
        return;
      }
      c.reader.append(buf, static_cast<size_t>(n));
      while (true) {
        auto cit = conns_.find(id);
        if (cit == conns_.end() || cit->second.closing) return;
        auto m = cit->second.reader.next();
        if (!m.is_ok()) {
          refuse(id, poolwire::Error::Code::BAD_REQUEST, m.status().message());
          return;
        }
        if (!m.value()) break;
        try {
          handle(id, m.value()->root());
        } catch (const std::exception& e) {  // a field that failed to read
          refuse(id, poolwire::Error::Code::BAD_REQUEST, std::string("malformed message: ") + e.what());
          return;
        }
      }
    }
  }

  void send(uint64_t id, capnp::MessageBuilder& message) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.closing) return;
    Conn& c = it->second;
    auto bytes = net::frame(message);
    if (c.out.size() - c.out_off + bytes.size() > kMaxPendingOutput) {
      RGPU_WARN("pool closing peer=%s reason=\"peer does not read its replies\"", c.peer.c_str());
      c.closing = true;
      c.out.clear();
      c.out_off = 0;
      return;
    }
    c.out.insert(c.out.end(), bytes.begin(), bytes.end());
    flush(c);
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        c.closing = true;
        c.out.clear();
        c.out_off = 0;
        return;
      }
      c.out_off += static_cast<size_t>(n);
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    } else if (c.out_off > (size_t{1} << 20)) {
      c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.out_off));
      c.out_off = 0;
    }
  }

  void send_error(uint64_t id, poolwire::Error::Code code, const std::string& text) {
    capnp::MallocMessageBuilder b;
    auto e = b.initRoot<PoolMessage>().initError();
    e.setCode(code);
    e.setMessage(text);
    send(id, b);
  }

  // Answers with an error and closes the connection once it is sent.
  void refuse(uint64_t id, poolwire::Error::Code code, const std::string& text) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    RGPU_WARN("pool refused peer=%s reason=\"%s\"", it->second.peer.c_str(), text.c_str());
    send_error(id, code, text);
    it = conns_.find(id);
    if (it != conns_.end()) it->second.closing = true;
    forget(id);
  }

  // A connection's requests and leases end with it.
  void forget(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    const auto tickets = std::exchange(c.tickets, {});
    const auto leases = std::exchange(c.leases, {});
    if (c.role == Conn::Role::kServer) {
      if (auto s = server_conn_.find(c.server_id); s != server_conn_.end() && s->second == id) server_conn_.erase(s);
    }
    for (TicketId t : tickets) {
      ticket_owner_.erase(t);
      ticket_origin_.erase(t);
      (void)core_->cancel(t);
    }
    for (LeaseId l : leases) {
      lease_owner_.erase(l);
      lease_origin_.erase(l);
      ended_on_.erase(l);
      auto changes = core_->release(l);
      if (changes.is_ok()) {
        RGPU_INFO("lease released lease=%llu reason=\"holder connection closed\"", static_cast<unsigned long long>(l));
        apply(changes.value());
      }
    }
  }

  void drop(uint64_t id, const char* why) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    RGPU_DEBUG("pool connection closed peer=%s reason=\"%s\"", it->second.peer.c_str(), why);
    forget(id);
    it = conns_.find(id);
    if (it == conns_.end()) return;
    close(it->second.fd);
    conns_.erase(it);
  }

  // Closes connections marked closing whose replies are out.
  void reap() {
    std::vector<uint64_t> done;
    for (auto& [id, c] : conns_) {
      if (c.closing && c.out_off >= c.out.size()) done.push_back(id);
    }
    for (uint64_t id : done) drop(id, "closing");
  }

  // ---- messages

  void handle(uint64_t id, PoolMessage::Reader m) {
    switch (m.which()) {
      case PoolMessage::REGISTER: return on_register(id, m.getRegister());
      case PoolMessage::HEARTBEAT: return on_heartbeat(id, m.getHeartbeat());
      case PoolMessage::SESSION_ENDED: return on_session_ended(id, m.getSessionEnded());
      case PoolMessage::SUBMIT: return on_submit(id, m.getSubmit());
      case PoolMessage::RELEASE: return on_release(id, m.getRelease());
      case PoolMessage::STATUS_QUERY: return on_status(id);
      case PoolMessage::HISTORY_QUERY: return on_history_query(id, m.getHistoryQuery());
      default:
        return refuse(id, poolwire::Error::Code::BAD_REQUEST,
                      "message of kind " + std::to_string(static_cast<int>(m.which())) + " is not for the pool");
    }
  }

  Conn* conn(uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : &it->second;
  }

  void on_register(uint64_t id, poolwire::Register::Reader r) {
    Conn* c = conn(id);
    if (c->role == Conn::Role::kClient) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "a client connection cannot register a server");
    }
    auto info = wire::read(r);
    if (!info.is_ok()) return refuse(id, poolwire::Error::Code::BAD_REQUEST, info.status().message());
    if (Status s = validate(info.value()); !s.is_ok()) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, s.message());
    }
    if (c->role == Conn::Role::kServer && c->server_id != info.value().id) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "one connection registers one server");
    }
    const std::string sid = info.value().id;
    const uint64_t boot = r.getBootId();
    // Only a holder of the pool's key may register, and never with a proof
    // it sent before: an impostor cannot take a real server's id, leases
    // and address.
    auto proof = r.getProof();
    Status proved = verify_register_proof(
        options_.key, std::string_view(reinterpret_cast<const char*>(proof.begin()), proof.size()), sid,
        info.value().address, boot, r.getTimeMs(), core_->now());
    if (proved.is_ok()) {
      auto last = last_register_ms_.find({sid, boot});
      if (last != last_register_ms_.end() && r.getTimeMs() <= last->second) {
        proved = failed("registration: a proof sent before (replayed)");
      }
    }
    if (!proved.is_ok()) {
      RGPU_WARN("pool refused registration server=%s peer=%s reason=\"%s\"", sid.c_str(), c->peer.c_str(),
                proved.message().c_str());
      return refuse(id, poolwire::Error::Code::REFUSED, proved.message());
    }
    last_register_ms_[{sid, boot}] = r.getTimeMs();
    c->role = Conn::Role::kServer;
    c->server_id = sid;
    c->peer = "server " + sid;
    // Another live connection of the same server: the newer one wins.
    if (auto s = server_conn_.find(sid); s != server_conn_.end() && s->second != id) {
      if (Conn* old = conn(s->second)) old->closing = true;
    }
    server_conn_[sid] = id;
    // The same rgpud reconnecting (same boot id, still known) keeps its
    // leases: its sessions are alive. Anything else registers afresh, and
    // the scheduler ends the leases of a previous boot.
    auto known = boot_.find(sid);
    bool still_known = false;
    bool same_address = false;
    for (const auto& v : core_->servers()) {
      still_known |= v.info.id == sid;
      same_address |= v.info.id == sid && v.info.address == info.value().address;
    }
    // With the state shared in etcd, a server this instance never saw but
    // the shared view holds (same address) has come over from an instance
    // that died: its sessions live on, so it keeps its leases. Boot ids are
    // not in etcd, so a restarted rgpud arriving here within the heartbeat
    // timeout keeps its old leases until their holders let go.
    const bool came_over = core_->shared() && known == boot_.end() && same_address;
    Result<Changes> kept = failed("not a reconnect");
    if ((known != boot_.end() && known->second == boot && still_known) || came_over) {
      kept = core_->heartbeat(sid, {});
    }
    if (kept.is_ok()) {
      boot_[sid] = boot;
      apply(kept.value());
      RGPU_INFO("server reconnected id=%s address=%s", sid.c_str(), info.value().address.c_str());
    } else {
      const size_t devices = info.value().devices.size();
      const std::string address = info.value().address;
      auto changes = core_->register_server(std::move(info.value()));
      if (!changes.is_ok()) return refuse(id, poolwire::Error::Code::BAD_REQUEST, changes.status().message());
      boot_[sid] = boot;
      RGPU_INFO("server registered id=%s address=%s devices=%zu", sid.c_str(), address.c_str(), devices);
      reply_registered(id);
      apply(changes.value());
      return;
    }
    reply_registered(id);
  }

  void reply_registered(uint64_t id) {
    capnp::MallocMessageBuilder b;
    b.initRoot<PoolMessage>().initRegistered().setHeartbeatIntervalMs(core_->config().heartbeat_interval_ms);
    send(id, b);
  }

  void on_heartbeat(uint64_t id, poolwire::Heartbeat::Reader h) {
    Conn* c = conn(id);
    if (c->role != Conn::Role::kServer) {
      send_error(id, poolwire::Error::Code::UNKNOWN_SERVER, "heartbeat before registration");
      return;
    }
    std::vector<DeviceUse> use;
    if (h.getUse().size() > wire::kMaxDevicesPerServer) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "heartbeat of too many devices");
    }
    for (auto u : h.getUse()) {
      const float util = u.getUtilization();
      if (!(util >= 0 && util <= 1)) return refuse(id, poolwire::Error::Code::BAD_REQUEST, "utilization out of 0..1");
      use.push_back(DeviceUse{u.getIndex(), u.getMemoryUsedBytes(), util});
    }
    auto changes = core_->heartbeat(c->server_id, use);
    if (!changes.is_ok()) {
      // Removed meanwhile (missed heartbeats): it must register again.
      send_error(id, poolwire::Error::Code::UNKNOWN_SERVER, changes.status().message());
      return;
    }
    sessions_[c->server_id] = h.getSessions();
    apply(changes.value());
  }

  void on_session_ended(uint64_t id, LeaseId lease) {
    Conn* c = conn(id);
    if (c->role != Conn::Role::kServer) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "only a server reports the end of sessions");
    }
    auto held = core_->lease(lease);
    if (!held) return;  // released already (the client, or the other server of a split lease)
    bool ours = false;
    for (const auto& p : held->placement) ours |= p.server_id == c->server_id;
    if (!ours) {
      RGPU_WARN("pool ignored session end server=%s lease=%llu reason=\"not placed there\"", c->server_id.c_str(),
                static_cast<unsigned long long>(lease));
      return;
    }
    // A lease split over servers is freed when its sessions on all of them
    // have ended (or its holder goes), so no slice is promised twice while
    // a session still runs on it.
    auto& ended = ended_on_[lease];
    ended.insert(c->server_id);
    for (const auto& p : held->placement) {
      if (!ended.count(p.server_id)) return;
    }
    RGPU_INFO("lease released lease=%llu reason=\"session ended on %s\"", static_cast<unsigned long long>(lease),
              c->server_id.c_str());
    release_lease(lease);
  }

  void release_lease(LeaseId lease) {
    // Its servers refuse it from now on and end what still holds it, so a
    // copy of the token admits nothing after its holder let it go.
    if (auto held = core_->lease(lease)) tell_servers_lease_ended(*held, "released");
    ended_on_.erase(lease);
    if (auto o = lease_owner_.find(lease); o != lease_owner_.end()) {
      if (Conn* holder = conn(o->second)) holder->leases.erase(lease);
      lease_owner_.erase(o);
    }
    lease_origin_.erase(lease);
    auto changes = core_->release(lease);
    if (changes.is_ok()) apply(changes.value());
  }

  void on_submit(uint64_t id, poolwire::Request::Reader r) {
    Conn* c = conn(id);
    if (c->role == Conn::Role::kServer) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "a server connection cannot ask for devices");
    }
    auto request = wire::read(r);
    if (!request.is_ok()) return refuse(id, poolwire::Error::Code::BAD_REQUEST, request.status().message());
    if (Status s = validate(request.value()); !s.is_ok()) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, s.message());
    }
    if (Status s = prove_tenant(r, request.value()); !s.is_ok()) {
      return refuse(id, poolwire::Error::Code::REFUSED, s.message());  // logged there
    }
    Origin origin;
    auto program = wire::read_text(r.getProgram(), "program");
    auto host = wire::read_text(r.getHostname(), "hostname");
    if (!program.is_ok() || !host.is_ok()) {
      return refuse(id, poolwire::Error::Code::BAD_REQUEST, "program or hostname malformed or too long");
    }
    origin.program = program.value();
    origin.hostname = host.value();
    c->role = Conn::Role::kClient;
    c->peer = "client " + origin.program + "@" + origin.hostname;
    auto submitted = core_->submit(std::move(request.value()));
    if (!submitted.is_ok()) {
      send_error(id, poolwire::Error::Code::REFUSED, submitted.status().message());
      return;
    }
    const TicketId ticket = submitted.value().ticket;
    c->tickets.insert(ticket);
    ticket_owner_[ticket] = id;
    ticket_origin_[ticket] = origin;
    bool placed = false;
    for (const auto& g : submitted.value().changes.granted) placed |= g.ticket == ticket;
    apply(submitted.value().changes);
    if (!placed && ticket_owner_.count(ticket)) send_queued(ticket);
  }

  // With tenant keys, a request must prove its tenant's key, fresh and
  // never sent before; without them any request passes.
  Status prove_tenant(poolwire::Request::Reader r, const Request& request) {
    if (options_.tenants.empty()) return Status::ok();
    auto secret = options_.tenants.find(request.tenant);
    if (!secret) return invalid_argument("unknown tenant " + request.tenant);
    const Millis now = core_->now();
    auto nonce = wire::verify(r, request, *secret, now);
    if (!nonce.is_ok()) return nonce.status();
    // Nonces are kept for as long as their proof's time is accepted.
    auto fresh = request_nonces_.insert(0, request.tenant + "/" + nonce.value(), r.getTimeMs() + 30'000, now);
    if (!fresh.is_ok()) return fresh.status();
    if (!fresh.value()) return failed("the request's proof was sent before (replayed)");
    return Status::ok();
  }

  void on_release(uint64_t id, LeaseId lease) {
    Conn* c = conn(id);
    if (!c->leases.count(lease)) return;  // not its own, or released already
    RGPU_INFO("lease released lease=%llu reason=\"released by its holder\"", static_cast<unsigned long long>(lease));
    release_lease(lease);
  }

  void on_status(uint64_t id) {
    capnp::MallocMessageBuilder b;
    StatusInputs in{core_->now(), core_->servers(), core_->leases(), core_->queue(), sessions_, {}, {}};
    for (const auto& [l, o] : lease_origin_) in.lease_origin[l] = {o.program, o.hostname};
    for (const auto& [t, o] : ticket_origin_) in.ticket_origin[t] = {o.program, o.hostname};
    write_status(b.initRoot<PoolMessage>().initStatus(), in);
    send(id, b);
  }

  // The history's lines for `rgpu pool report --pool`, bounded so the
  // reply fits the frame the asker reads (net::kMaxStatusFrame).
  void on_history_query(uint64_t id, poolwire::HistoryQuery::Reader q) {
    const Millis since = q.getSinceMs();
    if (since < 0) return refuse(id, poolwire::Error::Code::BAD_REQUEST, "history window below zero");
    bool truncated = false;
    const std::vector<std::string> lines = core_->history_lines(since, net::kMaxStatusFrame / 2, &truncated);
    capnp::MallocMessageBuilder b;
    auto out = b.initRoot<PoolMessage>().initHistory();
    out.setKept(core_->history() != nullptr);
    out.setTruncated(truncated);
    auto list = out.initLines(static_cast<unsigned>(lines.size()));
    for (unsigned i = 0; i < lines.size(); ++i) list.set(i, lines[i]);
    send(id, b);
  }

  void send_queued(TicketId ticket) {
    auto owner = ticket_owner_.find(ticket);
    auto pos = core_->position(ticket);
    if (owner == ticket_owner_.end() || !pos) return;
    capnp::MallocMessageBuilder b;
    auto q = b.initRoot<PoolMessage>().initQueued();
    q.setTicket(ticket);
    q.setAhead(static_cast<uint32_t>(pos->ahead));
    q.setWaitedMs(core_->now() - pos->since);
    q.setWhy(pos->why);
    send(owner->second, b);
  }

  void send_progress() {
    std::vector<TicketId> tickets;
    for (const auto& [t, owner] : ticket_owner_) tickets.push_back(t);
    for (TicketId t : tickets) send_queued(t);
  }

  // Leases whose holder is still connected are kept alive: renewed once
  // half their term has passed.
  void renew_held() {
    const Millis now = core_->now();
    const Millis ttl = core_->config().lease_ttl_ms;
    std::vector<LeaseId> due;
    for (const auto& [l, owner] : lease_owner_) {
      auto held = core_->lease(l);
      if (held && held->expiry - now < ttl / 2) due.push_back(l);
    }
    for (LeaseId l : due) (void)core_->renew(l);
  }

  // ---- what the scheduler changed

  void apply(const Changes& changes) {
    for (const Grant& g : changes.granted) on_granted(g);
    for (TicketId t : changes.timed_out) {
      auto owner = ticket_owner_.find(t);
      if (owner == ticket_owner_.end()) continue;
      const uint64_t id = owner->second;
      ticket_owner_.erase(owner);
      ticket_origin_.erase(t);
      if (Conn* c = conn(id)) c->tickets.erase(t);
      RGPU_INFO("request timed out ticket=%llu", static_cast<unsigned long long>(t));
      send_error(id, poolwire::Error::Code::TIMED_OUT, "no devices became free before the request's timeout");
    }
    for (const EndedLease& e : changes.ended) on_ended(e);
  }

  void on_granted(const Grant& g) {
    auto owner = ticket_owner_.find(g.ticket);
    const LeaseId lease = g.lease.id;
    if (owner == ticket_owner_.end()) {  // its client is gone
      auto changes = core_->release(lease);
      if (changes.is_ok()) apply(changes.value());
      return;
    }
    const uint64_t id = owner->second;
    ticket_owner_.erase(owner);
    Origin origin = ticket_origin_[g.ticket];
    ticket_origin_.erase(g.ticket);
    Conn* c = conn(id);
    if (c == nullptr) return;
    c->tickets.erase(g.ticket);
    auto token = core_->sign(g.lease);
    if (!token.is_ok()) {
      RGPU_ERROR("cannot sign lease=%llu: %s", static_cast<unsigned long long>(lease), token.status().message().c_str());
      send_error(id, poolwire::Error::Code::INTERNAL, "the pool cannot sign leases: " + token.status().message());
      auto changes = core_->release(lease);
      if (changes.is_ok()) apply(changes.value());
      return;
    }
    c->leases.insert(lease);
    lease_owner_[lease] = id;
    lease_origin_[lease] = origin;
    RGPU_INFO("lease granted lease=%llu tenant=%s devices=%zu waited_ms=%lld", static_cast<unsigned long long>(lease),
              g.lease.tenant.c_str(), g.lease.placement.size(), static_cast<long long>(g.waited_ms));
    capnp::MallocMessageBuilder b;
    auto out = b.initRoot<PoolMessage>().initGranted();
    out.setLeaseId(lease);
    out.setToken(token.value());
    wire::write_placement(out.initPlacement(static_cast<unsigned>(g.lease.placement.size())), g.lease.placement);
    out.setWaitedMs(g.waited_ms);
    out.setExpiry(g.lease.expiry);
    send(id, b);
  }

  // Tells each server of `lease` that is connected to end the lease's
  // sessions and refuse it from now on.
  void tell_servers_lease_ended(const Lease& lease, const char* reason) {
    std::set<std::string> told;
    for (const auto& p : lease.placement) {
      if (!told.insert(p.server_id).second) continue;
      auto s = server_conn_.find(p.server_id);
      if (s == server_conn_.end()) continue;
      capnp::MallocMessageBuilder b;
      auto end = b.initRoot<PoolMessage>().initEndSession();
      end.setLeaseId(lease.id);
      end.setReason(reason);
      wire::sign(end, options_.key, p.server_id, core_->now());
      send(s->second, b);
    }
  }

  void on_ended(const EndedLease& e) {
    const LeaseId lease = e.lease.id;
    const char* reason = end_reason_name(e.reason);
    RGPU_INFO("lease ended lease=%llu reason=%s", static_cast<unsigned long long>(lease), reason);
    // Every server of the lease that is still here ends its sessions: the
    // lease is gone whole, even where its slices were fine.
    tell_servers_lease_ended(e.lease, reason);
    if (auto o = lease_owner_.find(lease); o != lease_owner_.end()) {
      const uint64_t id = o->second;
      lease_owner_.erase(o);
      if (Conn* c = conn(id)) c->leases.erase(lease);
      capnp::MallocMessageBuilder b;
      auto end = b.initRoot<PoolMessage>().initLeaseEnded();
      end.setLeaseId(lease);
      end.setReason(reason);
      send(id, b);
    }
    lease_origin_.erase(lease);
    ended_on_.erase(lease);
  }

  const ServiceOptions options_;
  const int listen_fd_;
  const int wake_fd_;
  const std::string address_;
  const std::unique_ptr<Coordinator> core_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_conn_ = 1;
  std::map<std::string, uint64_t> server_conn_;
  std::map<std::string, uint64_t> boot_;
  // The time of each server boot's last accepted registration: a proof is
  // good once.
  std::map<std::pair<std::string, uint64_t>, Millis> last_register_ms_;
  // The nonces of clients' proofs still within their time (prove_tenant).
  ReplayCache request_nonces_;
  std::map<std::string, uint32_t> sessions_;
  std::map<TicketId, uint64_t> ticket_owner_;
  std::map<TicketId, Origin> ticket_origin_;
  std::map<LeaseId, uint64_t> lease_owner_;
  std::map<LeaseId, Origin> lease_origin_;
  // The servers of each split lease whose sessions have ended so far.
  std::map<LeaseId, std::set<std::string>> ended_on_;
};

}  // namespace

Result<std::unique_ptr<Service>> Service::open(ServiceOptions options) {
  if (options.key.empty()) return invalid_argument("the pool needs a lease key (--key-file)");
  if (Status s = validate(options.config); !s.is_ok()) return s;
  std::string bound;
  auto fd = net::listen_on(options.listen, &bound);
  if (!fd.is_ok()) return fd.status();
  CoordinatorOptions co;
  co.etcd = options.etcd;
  co.store.prefix = options.etcd_prefix;
  co.store.instance = options.instance.empty() ? bound : options.instance;
  co.history = options.history;
  co.metrics = options.metrics;
  auto core = Coordinator::open(options.config, options.key, std::make_unique<SystemClock>(), std::move(co));
  if (!core.is_ok()) {
    close(fd.value());
    return core.status();
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(fd.value());
    return failed(std::string("eventfd: ") + std::strerror(errno));
  }
  return std::unique_ptr<Service>(
      new ServiceImpl(std::move(options), fd.value(), bound, wake, std::move(core.value())));
}

}  // namespace rgpu::pool::service
