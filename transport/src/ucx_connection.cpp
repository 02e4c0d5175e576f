// One UCX connection: framing and sending, the hello handshake, in-order
// delivery of received messages, payloads, and closing.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rgpu/common/log.h"
#include "ucx_internal.h"

namespace rgpu::transport::ucx {
namespace {

// Completion callbacks own the request: ucp_request_free() before completion
// would silence them.
void send_done(void* request, ucs_status_t status, void* user_data) {
  static_cast<Waiter*>(user_data)->complete(status);
  ucp_request_free(request);
}

// A send whose buffers the transport owns: nobody waits for it. A failure
// shows as the endpoint's error, which closes the connection.
void owned_send_done(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<OwnedSend> owned(static_cast<OwnedSend*>(user_data));
  if (status != UCS_OK) RGPU_DEBUG("transport=ucx event=send_failed status=%s", ucs_status_string(status));
  owned->in_flight->fetch_sub(1, std::memory_order_acq_rel);
  owned->core->request_ended();
  ucp_request_free(request);
}

// One request of a detached send.
void detached_done(void* request, ucs_status_t status, void* user_data) {
  auto* d = static_cast<DetachedSend*>(user_data);
  Core* core = d->core;
  ucp_request_free(request);
  core->request_ended();
  core->detached_part_done(d, status);
}

void recv_done(void* request, ucs_status_t status, size_t length, void* user_data) {
  static_cast<Waiter*>(user_data)->complete(status);
  ucp_request_free(request);
}

void ep_error_cb(void* arg, ucp_ep_h ep, ucs_status_t status) {
  static_cast<UcxConnection*>(arg)->on_error(status);
}

// Logs the endpoint's lanes (which UCX transports carry what) at debug level.
void log_lanes(ucp_ep_h ep, const std::string& peer) {
  if (static_cast<int>(rgpu::log::level()) < static_cast<int>(rgpu::log::Level::kDebug)) return;
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return;
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  std::string all(text, size);
  std::free(text);
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    const std::string line = all.substr(start, end - start);
    if (line.find("lane[") != std::string::npos) {
      RGPU_DEBUG("transport=ucx event=lane peer=%s info=\"%s\"", peer.c_str(), line.c_str());
    }
    start = end + 1;
  }
}

// Fire-and-forget send of a hello or ack; the header lives in the connection.
ucs_status_t send_control(ucp_ep_h ep, unsigned id, const Hello* hello, uint32_t flags) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = flags;
  ucs_status_ptr_t req = ucp_am_send_nbx(ep, id, hello, sizeof(Hello), nullptr, 0, &p);
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  ucp_request_free(req);
  return UCS_OK;
}

}  // namespace

// ---- payloads ---------------------------------------------------------------

RndvPayload::~RndvPayload() {
  if (taken_.load(std::memory_order_acquire)) return;
  release_later();
}

// Releasing answers the sender (UCX's ATS) on the endpoint the data came
// from, and UCX 1.13's ucp_am_data_release sends that answer *before* it
// takes the worker's lock: it races every other call on the worker (a send
// from a program's thread corrupted the TCP endpoint's send state, aborting
// in tcp_ep.c:58, `ctx->offset <= ctx->length`). So the release runs on the
// thread that holds the progress role, which no progress call can race, and
// holds the Core's call lock exclusively, which every other thread's call
// holds shared.
void RndvPayload::release_later() {
  auto release = [core = core_.get(), owner = owner_, worker = worker_, desc = desc_] {
    std::unique_lock<std::shared_mutex> alone(core->calls_mu());
    if (owner == nullptr) {
      ucp_am_data_release(worker, desc);
    } else {
      owner->use([desc](ucp_worker_h w) { ucp_am_data_release(w, desc); });  // gone: freed with it
    }
  };
  if (core_->on_progress_thread()) {
    core_->defer(std::move(release));  // perhaps inside a UCX callback
  } else {
    (void)core_->post(std::move(release));  // refused once the transport is gone, and its workers with it
  }
}

Status RndvPayload::receive(void* dst) {
  if (taken_.exchange(true, std::memory_order_acq_rel)) return invalid_argument("payload already received");
  Waiter waiter(core_.get());
  {
    std::shared_lock<std::shared_mutex> lock(core_->life());
    if (!core_->alive()) return disconnected("transport shut down");
    if (dst == nullptr) {
      release_later();
      return invalid_argument("null receive buffer");
    }
    ucs_status_ptr_t req = nullptr;
    auto post = [&](ucp_worker_h worker) {
      std::shared_lock<std::shared_mutex> call(core_->calls_mu());
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      p.cb.recv_am = recv_done;
      p.user_data = &waiter;
      core_->set_memh(&p, dst, size_);
      waiter.add();
      req = ucp_am_recv_data_nbx(worker, desc_, dst, size_, &p);
    };
    if (owner_ != nullptr) {
      if (!owner_->use(post)) return disconnected("connection closed before its payload was received");
    } else {
      post(worker_);
    }
    if (req == nullptr) {
      waiter.complete(UCS_OK);
    } else if (UCS_PTR_IS_ERR(req)) {
      waiter.complete(UCS_PTR_STATUS(req));
    } else if (!core_->on_progress_thread()) {
      core_->kick();
    }
  }
  const ucs_status_t st = core_->wait(waiter, owner_.get());
  if (st != UCS_OK) return disconnected(std::string("payload receive failed: ") + ucs_status_string(st));
  return Status::ok();
}

// ---- connection -------------------------------------------------------------

UcxConnection::UcxConnection(std::shared_ptr<Core> core, std::string peer, bool client,
                             const ReceiveLimits& limits)
    : core_(std::move(core)), peer_(std::move(peer)), client_(client), assembler_(*this, limits) {}

void UcxConnection::set_receive_limits(const ReceiveLimits& limits) {
  std::lock_guard<std::mutex> lock(limits_mu_);
  new_limits_ = limits;
  limits_changed_.store(true, std::memory_order_release);
}

UcxConnection::~UcxConnection() = default;

Status UcxConnection::create_client_ep(const sockaddr_storage& addr, socklen_t len) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  p.sockaddr.addrlen = len;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = ep_error_cb;
  p.err_handler.arg = this;
  worker_ = core_->worker();
  const ucs_status_t st = ucp_ep_create(worker_, &p, &ep_);
  if (st != UCS_OK) {
    ep_ = nullptr;
    return disconnected(std::string("cannot connect to ") + peer_ + ": " + ucs_status_string(st));
  }
  return Status::ok();
}

Status UcxConnection::create_server_ep(ucp_conn_request_h request, std::shared_ptr<PeerWorker> own) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.conn_request = request;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = ep_error_cb;
  p.err_handler.arg = this;
  own_worker_ = std::move(own);
  worker_ = own_worker_ != nullptr ? own_worker_->get() : core_->worker();
  const ucs_status_t st = ucp_ep_create(worker_, &p, &ep_);
  if (st != UCS_OK) {
    ep_ = nullptr;
    return failed(std::string("cannot accept from ") + peer_ + ": " + ucs_status_string(st));
  }
  return Status::ok();
}

Status UcxConnection::send_hello() {
  hello_buf_ = Hello{kHelloMagic, kWireVersion, local_id_, 0};
  const ucs_status_t st = send_control(ep_, kAmHello, &hello_buf_, UCP_AM_SEND_FLAG_REPLY);
  if (st != UCS_OK) return disconnected(std::string("hello failed: ") + ucs_status_string(st));
  return Status::ok();
}

void UcxConnection::on_hello(const Hello& hello) {
  if (state_.load() != kConnecting) return;
  if (listener_ == nullptr || listener_->listener == nullptr) {
    // The listener was destroyed after the request arrived: refuse.
    core_->defer([self = shared_from_this()] { self->close_locked(true, disconnected("listener closed")); });
    return;
  }
  peer_id_ = hello.client_conn_id;
  hello_buf_ = Hello{kHelloMagic, kWireVersion, hello.client_conn_id, local_id_};
  const ucs_status_t st = send_control(ep_, kAmHelloAck, &hello_buf_, UCP_AM_SEND_FLAG_REPLY);
  if (st != UCS_OK) {
    RGPU_WARN("transport=ucx event=accept_failed peer=%s status=%s", peer_.c_str(), ucs_status_string(st));
    core_->defer([self = shared_from_this()] { self->close_locked(true, disconnected("accept failed")); });
    return;
  }
  state_.store(kOpen, std::memory_order_release);
  dispatched_ = true;
  Event ev;
  ev.kind = Event::kAccept;
  ev.conn = shared_from_this();
  ev.listener = std::move(listener_);
  core_->push_event(std::move(ev));
  RGPU_DEBUG("transport=ucx event=accepted peer=%s conn_id=%u", peer_.c_str(), local_id_);
}

void UcxConnection::on_hello_ack(const Hello& ack) {
  std::lock_guard<std::mutex> lock(connect_mu_);
  if (state_.load() != kConnecting || abandoned_) return;
  peer_id_ = ack.server_conn_id;
  state_.store(kOpen, std::memory_order_release);
  established_ = true;
  dispatched_ = true;
  connect_cv_.notify_all();
  log_lanes(ep_, peer_);
}

Status UcxConnection::wait_established(std::chrono::steady_clock::time_point deadline) {
  const bool ok = core_->wait_until(connect_mu_, connect_cv_,
                                    [this] { return established_ || !connect_error_.is_ok(); }, deadline);
  std::lock_guard<std::mutex> lock(connect_mu_);
  if (established_) return Status::ok();
  abandoned_ = true;
  if (!ok) return disconnected("connect to " + peer_ + " timed out");
  return connect_error_;
}

void UcxConnection::set_am_params(ucp_request_param_t* p, const Frame& frame, const void* data, size_t length) {
  p->op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  // Every message names its endpoint to the receiver, which accepts it only
  // for the connection of that endpoint (docs/transport.md, "Trust").
  p->flags = UCP_AM_SEND_FLAG_REPLY;
  const size_t threshold = core_->rndv_threshold();
  if (threshold != 0 && length != 0 && (frame.flags & (kHeaderInData | kHeaderPart)) == 0) {
    p->flags |= length >= threshold ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
  }
  if (length != 0) core_->set_memh(p, data, length);
}

ucs_status_t UcxConnection::post_am(Waiter& waiter, const Frame& frame, const void* header,
                                    size_t header_len, const void* data, size_t length) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = send_done;
  p.user_data = &waiter;
  set_am_params(&p, frame, data, length);
  waiter.add();
  ucs_status_ptr_t req = ucp_am_send_nbx(ep_, kAmMessage, header, header_len, data, length, &p);
  if (req == nullptr) {
    waiter.complete(UCS_OK);
    return UCS_OK;
  }
  if (UCS_PTR_IS_ERR(req)) {
    waiter.complete(UCS_PTR_STATUS(req));
    return UCS_PTR_STATUS(req);
  }
  return UCS_INPROGRESS;
}

Status UcxConnection::send_then(Bytes header, Bytes payload, const std::function<void()>& on_posted) {
  // Runs on_posted once, on every path out of the posting.
  struct Posted {
    const std::function<void()>& fn;
    bool done = false;
    void operator()() {
      if (!done && fn) fn();
      done = true;
    }
    ~Posted() { (*this)(); }
  } posted{on_posted};
  if (header.size() > kMaxHeader) return invalid_argument("header too large");
  Waiter waiter(core_.get());
  // Buffers UCX may read until the requests complete, so outside the lock scope.
  std::byte inline_buf[sizeof(Frame) + kMaxInlineHeader];
  Frame frames[2];
  bool in_flight = false;
  // Counted from before posting (under the lock, which a close takes
  // exclusively) until the wait below has ended.
  struct Counted {
    std::atomic<int>* count = nullptr;
    ~Counted() {
      if (count != nullptr) count->fetch_sub(1, std::memory_order_acq_rel);
    }
  } counted;
  {
    std::shared_lock<std::shared_mutex> lock(ep_mu_);
    if (state_.load(std::memory_order_acquire) != kOpen) return disconnected("connection closed");
    std::shared_lock<std::shared_mutex> call(core_->calls_mu());
    in_flight_->fetch_add(1, std::memory_order_acq_rel);
    counted.count = in_flight_.get();
    ucs_status_t st;
    if (header.size() <= core_->max_inline_header()) {
      frames[0] = Frame{next_send_seq_.fetch_add(1, std::memory_order_relaxed), peer_id_, kHeaderInline};
      std::memcpy(inline_buf, &frames[0], sizeof(Frame));
      if (!header.empty()) std::memcpy(inline_buf + sizeof(Frame), header.data(), header.size());
      st = post_am(waiter, frames[0], inline_buf, sizeof(Frame) + header.size(), payload.data(),
                   payload.size());
      in_flight = st == UCS_INPROGRESS;
    } else if (payload.empty()) {
      // A large header alone (a batch of async calls, say): UCX sends a copy
      // on its own, so that the sender does not wait for the peer to take it.
      auto owned = std::make_unique<OwnedSend>();
      owned->core = core_.get();
      owned->in_flight = in_flight_;
      owned->frame = Frame{next_send_seq_.fetch_add(1, std::memory_order_relaxed), peer_id_, kHeaderInData};
      owned->data.assign(header.begin(), header.end());
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_AM_SEND_FLAG_REPLY;
      p.cb.send = owned_send_done;
      p.user_data = owned.get();
      core_->request_started();
      in_flight_->fetch_add(1, std::memory_order_acq_rel);
      ucs_status_ptr_t req =
          ucp_am_send_nbx(ep_, kAmMessage, &owned->frame, sizeof(Frame), owned->data.data(), owned->data.size(), &p);
      if (req == nullptr || UCS_PTR_IS_ERR(req)) {
        in_flight_->fetch_sub(1, std::memory_order_acq_rel);
        core_->request_ended();
        st = req == nullptr ? UCS_OK : UCS_PTR_STATUS(req);
      } else {
        owned.release();  // freed by owned_send_done
        st = UCS_OK;
        if (!core_->on_progress_thread()) core_->kick();
      }
    } else {
      const uint64_t seq = next_send_seq_.fetch_add(2, std::memory_order_relaxed);
      frames[0] = Frame{seq, peer_id_, kHeaderPart};
      frames[1] = Frame{seq + 1, peer_id_, kHeaderFromPrev};
      st = post_am(waiter, frames[0], &frames[0], sizeof(Frame), header.data(), header.size());
      in_flight = st == UCS_INPROGRESS;
      if (st == UCS_OK || st == UCS_INPROGRESS) {
        st = post_am(waiter, frames[1], &frames[1], sizeof(Frame), payload.data(), payload.size());
        in_flight = in_flight || st == UCS_INPROGRESS;
      }
    }
    if (in_flight && !core_->on_progress_thread()) core_->kick();
  }
  posted();
  const ucs_status_t st = core_->wait(waiter, own_worker_.get());
  if (st != UCS_OK) return disconnected(std::string("send failed: ") + ucs_status_string(st));
  return Status::ok();
}

ucs_status_t UcxConnection::post_detached(DetachedSend* d, const void* header, size_t header_len, const void* data,
                                          size_t length) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = detached_done;
  p.user_data = d;
  set_am_params(&p, *static_cast<const Frame*>(header), data, length);
  core_->detached_part_started(d);
  core_->request_started();
  ucs_status_ptr_t req = ucp_am_send_nbx(ep_, kAmMessage, header, header_len, data, length, &p);
  if (req != nullptr && !UCS_PTR_IS_ERR(req)) return UCS_OK;  // detached_done ends it
  const ucs_status_t st = req == nullptr ? UCS_OK : UCS_PTR_STATUS(req);
  core_->request_ended();
  core_->detached_part_done(d, st);
  return st;
}

void UcxConnection::send_detached(Bytes header, Bytes payload, std::function<void(const Status&)> done) {
  if (header.size() > kMaxHeader) {
    done(invalid_argument("header too large"));
    return;
  }
  auto d = std::make_unique<DetachedSend>();
  d->core = core_.get();
  d->done = std::move(done);
  {
    std::shared_lock<std::shared_mutex> lock(ep_mu_);
    if (state_.load(std::memory_order_acquire) != kOpen || ep_ == nullptr) {
      lock.unlock();
      d->done(disconnected("connection closed"));
      return;
    }
    std::shared_lock<std::shared_mutex> call(core_->calls_mu());
    d->worker = worker_;
    d->in_flight = in_flight_;
    in_flight_->fetch_add(1, std::memory_order_acq_rel);  // until the Core ends it
    DetachedSend* raw = d.release();  // the Core's from here: the last part_done() frees it
    core_->track_detached(raw);
    if (header.size() <= core_->max_inline_header()) {
      raw->frames[0] = Frame{next_send_seq_.fetch_add(1, std::memory_order_relaxed), peer_id_, kHeaderInline};
      raw->head.resize(sizeof(Frame) + header.size());
      std::memcpy(raw->head.data(), &raw->frames[0], sizeof(Frame));
      if (!header.empty()) std::memcpy(raw->head.data() + sizeof(Frame), header.data(), header.size());
      (void)post_detached(raw, raw->head.data(), raw->head.size(), payload.data(), payload.size());
    } else {
      const uint64_t seq = next_send_seq_.fetch_add(2, std::memory_order_relaxed);
      raw->frames[0] = Frame{seq, peer_id_, kHeaderPart};
      raw->frames[1] = Frame{seq + 1, peer_id_, kHeaderFromPrev};
      raw->head.assign(header.begin(), header.end());
      if (post_detached(raw, &raw->frames[0], sizeof(Frame), raw->head.data(), raw->head.size()) == UCS_OK) {
        (void)post_detached(raw, &raw->frames[1], sizeof(Frame), payload.data(), payload.size());
      }
    }
    if (!core_->on_progress_thread()) core_->kick();
    core_->detached_part_done(raw, UCS_OK);  // the poster's count
  }
}

void UcxConnection::close() {
  {
    std::unique_lock<std::shared_mutex> lock(ep_mu_);
    int expected = kOpen;
    if (!state_.compare_exchange_strong(expected, kClosing)) {
      expected = kConnecting;
      if (!state_.compare_exchange_strong(expected, kClosing)) return;
    }
  }
  core_->post([self = shared_from_this()] { self->begin_close(); });
}

void UcxConnection::begin_close() {
  ucp_ep_h ep;
  {
    std::unique_lock<std::shared_mutex> lock(ep_mu_);
    if (state_.load() == kClosed) return;
    ep = ep_;
    // No send can be posting now (they hold the lock shared), so the bye is
    // the last sequence number.
    bye_buf_ = Frame{next_send_seq_.fetch_add(1), peer_id_, kBye};
  }
  if (ep == nullptr || !dispatched_) {
    close_locked(true, Status::ok());
    return;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY;
  ucs_status_ptr_t req = ucp_am_send_nbx(ep, kAmMessage, &bye_buf_, sizeof(Frame), nullptr, 0, &p);
  if (UCS_PTR_IS_ERR(req)) {
    close_locked(true, Status::ok());
    return;
  }
  if (req != nullptr) ucp_request_free(req);
  // The peer closes its endpoint once it has handed out everything before the
  // bye; that arrives here as an endpoint error. A silent peer is closed anyway.
  core_->expect_bye_answer(shared_from_this(), std::chrono::steady_clock::now() + std::chrono::seconds(2));
}

void UcxConnection::on_error(ucs_status_t status) {
  // Called inside UCX progress (or on UCX's async thread): close once
  // progress has returned.
  core_->defer([self = shared_from_this(), status] {
    if (self->state_.load() == kClosed) return;  // its worker may be gone already
    // Deliver what already arrived from the peer before tearing down.
    for (int i = 0; i < 64 && ucp_worker_progress(self->worker_) != 0; ++i) {
    }
    if (self->state_.load() == kClosing) {
      self->clean_close_ = true;
      self->close_locked(true, Status::ok());  // the peer answered our bye
      return;
    }
    const char* why = status == UCS_ERR_CONNECTION_RESET ? "peer closed the connection" : "peer failed";
    self->close_locked(true, disconnected(std::string(why) + ": " + ucs_status_string(status)));
  });
}

void UcxConnection::close_locked(bool force, Status status) {
  std::shared_ptr<UcxConnection> self = shared_from_this();
  ucp_ep_h ep;
  {
    std::unique_lock<std::shared_mutex> lock(ep_mu_);
    if (state_.load() == kClosed) return;
    state_.store(kClosed, std::memory_order_release);
    ep = ep_;
  }
  // No send can post from here on (they check the state under the lock).
  if (!force && in_flight_->load(std::memory_order_acquire) > 0) {
    RGPU_DEBUG("transport=ucx event=close_forced peer=%s conn_id=%u sends_in_flight=%d", peer_.c_str(), local_id_,
               in_flight_->load());
    force = true;
  }
  RGPU_DEBUG("transport=ucx event=close peer=%s conn_id=%u force=%d status=%s", peer_.c_str(), local_id_,
             force ? 1 : 0, status.to_string().c_str());
  core_->unregister_connection(local_id_);
  if (ep != nullptr) core_->drop_accepting(ep);
  assembler_.reset();
  listener_.reset();
  {
    std::lock_guard<std::mutex> lock(connect_mu_);
    if (!established_ && connect_error_.is_ok()) {
      connect_error_ = status.is_ok() ? disconnected("connection closed") : status;
    }
    connect_cv_.notify_all();
  }
  if (ep != nullptr) core_->close_ep(ep, force, self);
  if (dispatched_ && !close_reported_) {
    Event ev;
    ev.kind = Event::kClosed;
    ev.conn = self;
    ev.status = std::move(status);
    core_->push_event(std::move(ev));
  }
}

void UcxConnection::fail(Status why) {
  if (failing_) return;
  failing_ = true;
  RGPU_WARN("transport=ucx event=peer_error peer=%s conn_id=%u reason=\"%s\"", peer_.c_str(), local_id_,
            why.message().c_str());
  core_->defer([self = shared_from_this(), why = std::move(why)] { self->close_locked(true, why); });
}

void UcxConnection::note_foreign_frame(const char* what, bool has_reply_ep) {
  if (foreign_logged_) return;
  foreign_logged_ = true;
  RGPU_WARN("transport=ucx event=drop reason=foreign_frame what=%s conn_id=%u peer=%s reply_ep=%s", what,
            local_id_, peer_.c_str(), has_reply_ep ? "other" : "none");
}

// ---- receive side (progress thread) ----------------------------------------

void UcxConnection::deliver(uint64_t seq, Message message, size_t bytes) {
  (void)seq;
  Event ev;
  ev.kind = Event::kMessage;
  ev.conn = shared_from_this();
  ev.message = std::move(message);
  ev.bytes = bytes;
  core_->push_event(std::move(ev));
}

void UcxConnection::peer_bye() {
  // The peer finished writing: its worker can serve another connection,
  // even if its socket resets before the bye is handled.
  clean_close_ = true;
  // Everything the peer sent before its bye is queued before this.
  Event ev;
  ev.kind = Event::kPeerBye;
  ev.conn = shared_from_this();
  core_->push_event(std::move(ev));
}

// A header travelling by rendezvous. It owns the buffer UCX writes into, so a
// connection closed meanwhile cannot free it under UCX.
struct UcxConnection::HeaderFetch {
  std::shared_ptr<UcxConnection> conn;
  uint64_t seq;
  std::vector<std::byte> buffer;
};

void UcxConnection::on_header_fetched(void* request, ucs_status_t status, size_t length, void* user_data) {
  std::unique_ptr<HeaderFetch> fetch(static_cast<HeaderFetch*>(user_data));
  ucp_request_free(request);
  fetch->conn->core_->request_ended();
  UcxConnection& c = *fetch->conn;
  if (c.state_.load() == kClosed || c.failing_) return;
  if (status != UCS_OK) {
    c.fail(disconnected(std::string("header receive failed: ") + ucs_status_string(status)));
    return;
  }
  const Status st = c.assembler_.header_fetched(fetch->seq, std::move(fetch->buffer));
  if (!st.is_ok()) c.fail(st);
}

namespace {

// Hands the assembler a frame's rendezvous data as a payload object.
class UcxRndvSource final : public RndvSource {
 public:
  UcxRndvSource(const std::shared_ptr<Core>& core, ucp_worker_h worker, const std::shared_ptr<PeerWorker>& owner,
                void* desc, size_t length)
      : core_(core), worker_(worker), owner_(owner), desc_(desc), length_(length) {}
  std::unique_ptr<IncomingPayload> take() override {
    return std::make_unique<RndvPayload>(core_, worker_, owner_, desc_, length_);
  }

 private:
  const std::shared_ptr<Core>& core_;
  ucp_worker_h worker_;
  const std::shared_ptr<PeerWorker>& owner_;
  void* desc_;
  size_t length_;
};

}  // namespace

ucs_status_t UcxConnection::on_am(const Frame& frame, const std::byte* header, size_t header_len, void* data,
                                  size_t length, uint64_t recv_attr) {
  const int state = state_.load(std::memory_order_acquire);
  if (state == kClosed || failing_) return UCS_OK;
  if (state == kConnecting && !client_) {
    // A client speaks only once its hello was answered.
    fail(failed("protocol error: message before hello"));
    return UCS_OK;
  }
  if (limits_changed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(limits_mu_);
    limits_changed_.store(false, std::memory_order_relaxed);
    assembler_.set_limits(new_limits_);
  }
  FrameBytes in;
  in.header = header;
  in.header_len = header_len;
  in.data = static_cast<const std::byte*>(data);
  in.length = length;
  in.rndv = (recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  UcxRndvSource rndv(core_, worker_, own_worker_, data, length);
  FeedResult r = assembler_.feed(frame, in, &rndv);
  if (!r.status.is_ok()) {
    fail(std::move(r.status));
    return r.payload_kept ? UCS_INPROGRESS : UCS_OK;
  }
  if (r.fetch_header) {
    auto fetch = std::make_unique<HeaderFetch>(HeaderFetch{shared_from_this(), frame.seq, {}});
    fetch->buffer.resize(length);
    void* dst = fetch->buffer.data();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = on_header_fetched;
    p.user_data = fetch.get();
    core_->request_started();
    ucs_status_ptr_t req = ucp_am_recv_data_nbx(worker_, data, dst, length, &p);
    if (req == nullptr || UCS_PTR_IS_ERR(req)) core_->request_ended();
    if (req == nullptr) {
      const Status st = assembler_.header_fetched(frame.seq, std::move(fetch->buffer));
      if (!st.is_ok()) fail(st);
    } else if (UCS_PTR_IS_ERR(req)) {
      fail(disconnected(std::string("header receive failed: ") + ucs_status_string(UCS_PTR_STATUS(req))));
    } else {
      fetch.release();  // owned by on_header_fetched
    }
  }
  return r.payload_kept ? UCS_INPROGRESS : UCS_OK;
}

}  // namespace rgpu::transport::ucx
