// The UCX transport object: listen (ucp_listener, connection requests) and
// connect (client-server endpoints with the hello handshake).
#include <chrono>

#include "rgpu/common/log.h"
#include "ucx_internal.h"

namespace rgpu::transport {
namespace ucx {
namespace {

// Generous bound for work handed to the progress thread; it only runs late
// when a handler blocks it.
constexpr auto kCommandTimeout = std::chrono::seconds(30);

// Runs fn on the progress thread and waits for its status.
Status run_on_progress(Core& core, std::function<Status()> fn) {
  struct Sync {
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    Status result;
  };
  auto sync = std::make_shared<Sync>();
  const bool posted = core.post([sync, fn = std::move(fn)] {
    Status st = fn();
    std::lock_guard<std::mutex> lock(sync->mu);
    sync->result = std::move(st);
    sync->finished = true;
    sync->cv.notify_all();
  });
  if (!posted) return disconnected("transport shut down");
  if (!core.wait_until(sync->mu, sync->cv, [&] { return sync->finished; },
                       std::chrono::steady_clock::now() + kCommandTimeout)) {
    return core.stopping() ? disconnected("transport shut down") : failed("transport progress thread stalled");
  }
  std::lock_guard<std::mutex> lock(sync->mu);
  return sync->result;
}

// The server endpoint for `request`, its connection registered (with
// `listener`, when it is to be handed on), or null when UCX could not make
// it. No reject then: a failed ucp_ep_create on a request has rejected and
// freed it already (UCX 1.13, wireup_cm.c); a second reject would free it
// twice.
// An accepted connection from this host, where shared memory may carry it,
// gets a worker of its own (Core::make_peer_worker); any other, and one
// refused, gets the main worker (a flood of refused requests then costs no
// more than their endpoints). Where UCX cannot make a worker, the connection
// shares the main one rather than being dropped.
std::shared_ptr<UcxConnection> server_endpoint(Core* core, ucp_conn_request_h request, const std::string& peer,
                                               std::shared_ptr<ListenerState> listener, bool same_host) {
  auto conn = std::make_shared<UcxConnection>(core->shared_from_this(), peer, false, core->initial_limits());
  std::shared_ptr<PeerWorker> own;
  if (listener != nullptr && same_host && core->shared_memory_possible()) {
    auto made = core->make_peer_worker();
    if (made.is_ok()) {
      own = std::move(made.value());
    } else {
      RGPU_WARN("transport=ucx event=peer_worker_failed peer=%s error=\"%s\" action=share_main_worker",
                peer.c_str(), made.status().message().c_str());
    }
  }
  if (listener != nullptr) conn->set_listener(std::move(listener));
  core->register_connection(conn);
  const Status st = conn->create_server_ep(request, std::move(own));
  if (!st.is_ok()) {
    RGPU_WARN("transport=ucx event=accept_failed peer=%s error=\"%s\"", peer.c_str(), st.message().c_str());
    core->unregister_connection(conn->local_id());
    return nullptr;
  }
  return conn;
}

// A request past the limits: accepted, never handed on, and closed once its
// connection handshake is over (Core::kRefuseDelay). Neither rejected nor
// closed at once: UCX 1.13's asynchronous layer can deliver a socket event
// it missed to whatever endpoint holds that descriptor number by then, and a
// socket connection manager endpoint freed mid-handshake (as a reject or an
// early close frees it) has its number reused at once under a flood, so its
// stale write event reached a fresh endpoint and failed UCX's assertion in
// uct_tcp_sockcm_ep_progress_send, bringing rgpud down (fixed in later UCX
// by filtering stale missed events). An endpoint past its handshake is
// closed as safely as any other.
void refuse_request(Core* core, ListenerState* raw, ucp_conn_request_h request, const std::string& peer) {
  std::shared_ptr<ListenerState> listener = core->listener_ptr(raw);
  if (listener == nullptr || listener->listener == nullptr) return;
  if (auto conn = server_endpoint(core, request, peer, nullptr, false)) core->close_refused_later(std::move(conn));
}

// A connection request on a listener, admitted (Core::admit_request):
// create the endpoint and wait for the client's hello before handing the
// connection to on_accept. Every path gives the admission back, or hands it
// to the accepting endpoint.
void accept_request(Core* core, ListenerState* raw, ucp_conn_request_h request, const std::string& source,
                    const std::string& peer, bool same_host) {
  std::shared_ptr<ListenerState> listener = core->listener_ptr(raw);
  if (listener == nullptr || listener->listener == nullptr) {
    // Destroyed with its listener, which UCX closed with its requests.
    core->release_request(source);
    return;
  }
  if (core->stopping()) {
    core->release_request(source);
    refuse_request(core, raw, request, peer);
    return;
  }
  auto conn = server_endpoint(core, request, peer, listener, same_host);
  if (conn == nullptr) {
    core->release_request(source);
    return;
  }
  core->add_accepting(conn->ep(), conn, source);
  core->expect_hello(conn);
  RGPU_DEBUG("transport=ucx event=conn_request peer=%s conn_id=%u", peer.c_str(), conn->local_id());
}

// UCX's connection handler, on the progress thread: a request past the
// limits of connections before their hello is refused without waiting for
// its hello; an admitted one is accepted. Both outside UCX's callback.
void conn_request_cb(ucp_conn_request_h request, void* arg) {
  auto* listener = static_cast<ListenerState*>(arg);
  Core* core = listener->core;
  std::string source = "unknown";
  std::string peer = "unknown";
  bool same_host = false;
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (ucp_conn_request_query(request, &attr) == UCS_OK) {
    source = format_source(reinterpret_cast<const sockaddr*>(&attr.client_address));
    peer = format_sockaddr(reinterpret_cast<const sockaddr*>(&attr.client_address));
    same_host = core->is_local_address(reinterpret_cast<const sockaddr*>(&attr.client_address));
  }
  if (core->stopping() || !core->admit_request(source)) {
    if (!core->stopping()) core->note_rejected(source);
    core->defer(
        [core, listener, request, peer = std::move(peer)] { refuse_request(core, listener, request, peer); });
    return;
  }
  core->defer([core, listener, request, source = std::move(source), peer = std::move(peer), same_host] {
    accept_request(core, listener, request, source, peer, same_host);
  });
}

// Stops accepting when destroyed. Thread-safe.
class UcxListener final : public Listener {
 public:
  UcxListener(std::shared_ptr<Core> core, std::shared_ptr<ListenerState> state)
      : core_(std::move(core)), state_(std::move(state)), address_(state_->address) {}
  // Waits until the socket is closed, so that a later connect() cannot reach it.
  ~UcxListener() override {
    run_on_progress(*core_, [core = core_, state = state_] {
      core->remove_listener(state);
      return Status::ok();
    });
  }
  std::string address() const override { return address_; }

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<ListenerState> state_;
  const std::string address_;
};

// Owns the Core; destroying it shuts the core down. Thread-safe.
class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~UcxTransport() override { core_->shutdown(); }

  Result<std::unique_ptr<Listener>> listen(const std::string& host_port, AcceptFn on_accept) override {
    if (!on_accept) return invalid_argument("listen needs an accept callback");
    if (!core_->unusable_tls().empty()) {
      RGPU_ERROR("transport=ucx event=listen_failed address=%s error=\"%s\"", host_port.c_str(),
                 core_->unusable_tls().c_str());
      return failed(core_->unusable_tls());
    }
    sockaddr_storage addr{};
    socklen_t len = 0;
    Status st = resolve(host_port, &addr, &len);
    if (!st.is_ok()) return st;
    auto state = std::make_shared<ListenerState>();
    state->core = core_.get();
    state->on_accept = std::move(on_accept);
    st = run_on_progress(*core_, [core = core_, state, addr, len]() -> Status {
      ucp_listener_params_t p{};
      p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
      p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
      p.sockaddr.addrlen = len;
      p.conn_handler.cb = conn_request_cb;
      p.conn_handler.arg = state.get();
      ucs_status_t s = ucp_listener_create(core->worker(), &p, &state->listener);
      if (s != UCS_OK) {
        state->listener = nullptr;
        return failed(std::string("listen failed: ") + ucs_status_string(s));
      }
      ucp_listener_attr_t attr{};
      attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
      s = ucp_listener_query(state->listener, &attr);
      if (s != UCS_OK) {
        ucp_listener_destroy(state->listener);
        state->listener = nullptr;
        return failed(std::string("ucp_listener_query: ") + ucs_status_string(s));
      }
      state->address = format_sockaddr(reinterpret_cast<const sockaddr*>(&attr.sockaddr));
      core->add_listener(state);
      return Status::ok();
    });
    if (!st.is_ok()) {
      RGPU_ERROR("transport=ucx event=listen_failed address=%s error=\"%s\"", host_port.c_str(),
                 st.message().c_str());
      return st;
    }
    RGPU_INFO("transport=ucx event=listening address=%s", state->address.c_str());
    return std::unique_ptr<Listener>(std::make_unique<UcxListener>(core_, state));
  }

  Result<std::shared_ptr<Connection>> connect(const std::string& host_port, ConnectionHandler handler,
                                              std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    sockaddr_storage addr{};
    socklen_t len = 0;
    Status st = resolve(host_port, &addr, &len);
    if (!st.is_ok()) return st;
    if (!core_->unusable_tls().empty()) {
      RGPU_ERROR("transport=ucx event=connect_failed address=%s error=\"%s\"", host_port.c_str(),
                 core_->unusable_tls().c_str());
      return failed(core_->unusable_tls());
    }
    if (core_->stopping()) return disconnected("transport shut down");
    auto conn = std::make_shared<UcxConnection>(core_, host_port, true, core_->initial_limits());
    conn->set_handler(std::move(handler));
    const bool posted = core_->post([core = core_, conn, addr, len] {
      if (core->stopping()) {
        conn->close_locked(true, disconnected("transport shut down"));
        return;
      }
      core->register_connection(conn);
      Status s = conn->create_client_ep(addr, len);
      if (s.is_ok()) s = conn->send_hello();
      if (!s.is_ok()) conn->close_locked(true, s);
    });
    if (!posted) return disconnected("transport shut down");
    st = conn->wait_established(deadline);
    if (!st.is_ok()) {
      core_->post([conn] { conn->close_locked(true, disconnected("connect abandoned")); });
      RGPU_DEBUG("transport=ucx event=connect_failed address=%s error=\"%s\"", host_port.c_str(),
                 st.message().c_str());
      return st;
    }
    RGPU_DEBUG("transport=ucx event=connected address=%s conn_id=%u", host_port.c_str(), conn->local_id());
    return std::shared_ptr<Connection>(std::move(conn));
  }

  const char* name() const override { return "ucx"; }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace
}  // namespace ucx

Result<std::unique_ptr<Transport>> make_ucx_transport(const UcxOptions& options) {
  Result<std::shared_ptr<ucx::Core>> core = ucx::Core::create(options);
  if (!core.is_ok()) {
    RGPU_ERROR("transport=ucx event=init_failed error=\"%s\"", core.status().message().c_str());
    return core.status();
  }
  core.value()->start();
  return std::unique_ptr<Transport>(std::make_unique<ucx::UcxTransport>(std::move(core.value())));
}

}  // namespace rgpu::transport
