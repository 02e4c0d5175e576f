// The UCX worker core: context and worker setup, the progress thread that
// sleeps on the worker's event fd, command posting, waits, AM dispatch and
// shutdown. Connections, listeners and admission are in ucx_peers.cpp.
#include <netdb.h>
#include <arpa/inet.h>
#include <sched.h>
#include <ifaddrs.h>
#include <sys/epoll.h>

#include <cstdio>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "rgpu/common/log.h"
#include "ucx_internal.h"

namespace rgpu::transport::ucx {
namespace {

// Longest sleep on the event fd; UCX timers (keepalive) need progress now and then.
constexpr int kIdleSleepMs = 100;
// How long the progress thread keeps polling (and yielding) while requests
// are in flight before it sleeps in growing steps.
constexpr auto kPollWhileInflight = std::chrono::milliseconds(2);
// How long a thread waiting for its own transfer drives the worker itself.
constexpr auto kWaitDriveBudget = std::chrono::seconds(5);
// How long shutdown waits for endpoints to finish closing.
constexpr auto kShutdownGrace = std::chrono::seconds(2);

// The connection a frame or ack names, when it arrived on that connection's
// own endpoint. The id is the peer's word; the reply endpoint is UCX's, so a
// peer cannot reach a connection other than its own (docs/transport.md, "Trust").
UcxConnection* bound_connection(Core* core, uint32_t conn_id, const ucp_am_recv_param_t* param,
                                const char* what) {
  UcxConnection* conn = core->find_connection(conn_id);
  if (conn == nullptr) {
    RGPU_DEBUG("transport=ucx event=drop reason=unknown_connection what=%s conn_id=%u", what, conn_id);
    return nullptr;
  }
  const bool has_reply_ep = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0;
  if (!has_reply_ep || param->reply_ep != conn->ep() || conn->ep() == nullptr) {
    conn->note_foreign_frame(what, has_reply_ep);
    return nullptr;
  }
  return conn;
}

ucs_status_t am_message_cb(void* arg, const void* header, size_t header_length, void* data,
                           size_t length, const ucp_am_recv_param_t* param) {
  auto* core = static_cast<Core*>(arg);
  if (header_length < sizeof(Frame)) {
    RGPU_WARN("transport=ucx event=drop reason=short_frame header_bytes=%zu", header_length);
    return UCS_OK;
  }
  Frame frame;
  std::memcpy(&frame, header, sizeof(frame));
  UcxConnection* conn = bound_connection(core, frame.conn_id, param, "message");
  if (conn == nullptr) return UCS_OK;
  return conn->on_am(frame, static_cast<const std::byte*>(header) + sizeof(Frame),
                     header_length - sizeof(Frame), data, length, param->recv_attr);
}

bool parse_hello(const void* header, size_t header_length, Hello* out) {
  if (header_length != sizeof(Hello)) return false;
  std::memcpy(out, header, sizeof(Hello));
  return out->magic == kHelloMagic && out->version == kWireVersion;
}

ucs_status_t am_hello_cb(void* arg, const void* header, size_t header_length, void* data, size_t length,
                         const ucp_am_recv_param_t* param) {
  auto* core = static_cast<Core*>(arg);
  Hello hello;
  if (!parse_hello(header, header_length, &hello) ||
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0) {
    RGPU_WARN("transport=ucx event=drop reason=bad_hello header_bytes=%zu", header_length);
    return UCS_OK;
  }
  std::shared_ptr<UcxConnection> conn = core->take_accepting(param->reply_ep);
  if (conn == nullptr) {
    RGPU_DEBUG("transport=ucx event=drop reason=hello_without_request");
    return UCS_OK;
  }
  conn->on_hello(hello);
  return UCS_OK;
}

ucs_status_t am_hello_ack_cb(void* arg, const void* header, size_t header_length, void* data,
                             size_t length, const ucp_am_recv_param_t* param) {
  auto* core = static_cast<Core*>(arg);
  Hello ack;
  if (!parse_hello(header, header_length, &ack)) {
    RGPU_WARN("transport=ucx event=drop reason=bad_hello_ack header_bytes=%zu", header_length);
    return UCS_OK;
  }
  if (UcxConnection* conn = bound_connection(core, ack.client_conn_id, param, "hello_ack")) {
    conn->on_hello_ack(ack);
  }
  return UCS_OK;
}

Status ucx_error(const char* what, ucs_status_t status) {
  return failed(std::string(what) + ": " + ucs_status_string(status));
}

}  // namespace

namespace {

// The transport names of a UCX_TLS value, each without UCX's leading '\'
// (which asks for the exact transport rather than an alias).
std::vector<std::string> tls_names(const std::string& tls) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= tls.size()) {
    size_t end = tls.find(',', start);
    if (end == std::string::npos) end = tls.size();
    std::string name = tls.substr(start, end - start);
    if (!name.empty() && name[0] == '\\') name.erase(0, 1);
    if (!name.empty()) names.push_back(std::move(name));
    start = end + 1;
  }
  return names;
}

bool one_of(const std::string& name, std::initializer_list<const char*> set) {
  for (const char* s : set) {
    if (name == s) return true;
  }
  return false;
}

}  // namespace

bool tls_may_use_shared_memory(const char* tls) {
  if (tls == nullptr || tls[0] == '^') return true;  // all, or all but some
  for (const std::string& name : tls_names(tls)) {
    if (one_of(name, {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem"})) return true;
  }
  return false;
}

std::string tls_cannot_connect(const char* tls) {
  if (tls == nullptr || tls[0] == '^') return {};
  const std::vector<std::string> names = tls_names(tls);
  // Transports that only ever reach this host; any other name (tcp, rdmacm,
  // verbs, or one this list does not know) may carry a connection manager.
  for (const std::string& name : names) {
    if (!one_of(name, {"self", "sm", "shm", "mm", "posix", "sysv", "xpmem", "knem", "cma", "cuda", "cuda_copy",
                       "cuda_ipc", "gdr_copy", "rocm", "rocm_copy", "rocm_ipc"})) {
      return {};
    }
  }
  return std::string("UCX_TLS=") + tls +
         " cannot make connections: UCX's connection manager needs tcp (or rdmacm on InfiniBand) in "
         "UCX_TLS, e.g. UCX_TLS=posix,sysv,cma,tcp; shared memory still carries the data";
}

void Waiter::add() {
  core->request_started();
  std::lock_guard<std::mutex> lock(mu);
  ++pending;
}

void Waiter::complete(ucs_status_t s) {
  core->request_ended();
  std::lock_guard<std::mutex> lock(mu);
  if (s != UCS_OK && status == UCS_OK) status = s;
  if (--pending == 0) {
    done = true;
    cv.notify_all();
  }
}

Status Core::register_memory(void* ptr, size_t size) {
  if (ptr == nullptr || size == 0) return invalid_argument("empty memory range");
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  if (start + size < start) return invalid_argument("memory range wraps around");
  std::shared_lock<std::shared_mutex> life(life_);
  if (!alive_) return disconnected("transport shut down");
  std::unique_lock<std::shared_mutex> lock(regs_mu_);
  auto next = regs_.lower_bound(start);
  if (next != regs_.end() && next->first < start + size) return invalid_argument("memory range overlaps a registered one");
  if (next != regs_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > start) return invalid_argument("memory range overlaps a registered one");
  }
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = ptr;
  p.length = size;
  ucp_mem_h memh = nullptr;
  const ucs_status_t st = ucp_mem_map(context_, &p, &memh);
  if (st != UCS_OK) return ucx_error("ucp_mem_map", st);
  regs_.emplace(start, Registration{size, memh});
  have_regs_.store(true, std::memory_order_release);
  RGPU_DEBUG("transport=ucx event=register bytes=%zu", size);
  return Status::ok();
}

void Core::unregister_memory(void* ptr) {
  std::shared_lock<std::shared_mutex> life(life_);
  std::unique_lock<std::shared_mutex> lock(regs_mu_);
  auto it = regs_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == regs_.end()) return;
  if (alive_) ucp_mem_unmap(context_, it->second.memh);
  regs_.erase(it);
}

ucp_mem_h Core::find_memh(const void* ptr, size_t size) {
  if (!have_regs_.load(std::memory_order_acquire) || ptr == nullptr) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  std::shared_lock<std::shared_mutex> lock(regs_mu_);
  auto it = regs_.upper_bound(start);
  if (it == regs_.begin()) return nullptr;
  --it;
  const uintptr_t end = it->first + it->second.size;
  return start < end && size <= end - start ? it->second.memh : nullptr;
}

void Core::set_memh(ucp_request_param_t* param, const void* ptr, size_t size) {
  if (ucp_mem_h memh = find_memh(ptr, size)) {
    param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param->memh = memh;
  }
}

Result<std::shared_ptr<Core>> Core::create(const UcxOptions& options) {
  std::shared_ptr<Core> core(new Core());
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error("ucp_config_read", st);
  // Defaults that let a client and server on one host talk through shared
  // memory, each overridden by its UCX_ variable (docs/transport.md):
  // - shared-memory transports are left out of endpoints that need peer
  //   failure detection unless their error handling is on;
  // - rendezvous by get_zcopy, so that where no transport can read remote
  //   memory (shared memory under peer error handling, tcp) bulk data goes in
  //   fragments over the active-message lane instead of over tcp.
  for (const auto& [name, value] : {std::pair<const char*, const char*>{"MM_ERROR_HANDLING", "y"},
                                    std::pair<const char*, const char*>{"RNDV_SCHEME", "get_zcopy"}}) {
    if (std::getenv((std::string("UCX_") + name).c_str()) != nullptr) continue;
    // UCX warns about settings of transports that UCX_TLS leaves out.
    if (std::string(name) == "MM_ERROR_HANDLING" && !tls_may_use_shared_memory(std::getenv("UCX_TLS"))) continue;
    st = ucp_config_modify(config, name, value);
    if (st != UCS_OK) {
      RGPU_DEBUG("transport=ucx event=config_default_skipped name=%s status=%s", name, ucs_status_string(st));
    }
  }
  if (options.rendezvous_threshold != 0) {
    // The per-send flags force the protocol; this keeps UCX's own estimate in step.
    ucp_config_modify(config, "RNDV_THRESH", std::to_string(options.rendezvous_threshold).c_str());
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "rgpu";
  st = ucp_init(&params, config, &core->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error("ucp_init", st);
  ucp_context_attr_t cattr{};
  cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(core->context_, &cattr) == UCS_OK) {
    core->cuda_memory_ = (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  }

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(core->context_, &wparams, &core->worker_);
  if (st != UCS_OK) return ucx_error("ucp_worker_create", st);

  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  st = ucp_worker_query(core->worker_, &attr);
  if (st != UCS_OK) return ucx_error("ucp_worker_query", st);
  if (attr.thread_mode != UCS_THREAD_MODE_MULTI) {
    return failed("UCX was built without multi-thread support (needs --enable-mt)");
  }
  if (attr.max_am_header < sizeof(Frame)) return failed("UCX active message header too small");
  core->max_inline_header_ = std::min(attr.max_am_header - sizeof(Frame), kMaxInlineHeader);
  core->rndv_threshold_ = options.rendezvous_threshold;
  core->idle_spin_ = options.idle_spin;
  core->wait_drive_ = kWaitDriveBudget;
  core->inflight_poll_ = kPollWhileInflight;
  // RGPU_TRANSPORT_SPIN_US caps every poll of the worker before a sleep: the
  // progress thread's idle spin and its polling while operations are in
  // flight, and a waiting sender's drive. 0 makes every wait sleep
  // (benchmarks/instructions.sh, so that instruction counts are work, not
  // waiting); it costs latency.
  if (const char* cap = std::getenv("RGPU_TRANSPORT_SPIN_US"); cap != nullptr && *cap) {
    char* end = nullptr;
    const unsigned long long us = std::strtoull(cap, &end, 10);
    if (end == cap || *end != '\0') {
      return invalid_argument("RGPU_TRANSPORT_SPIN_US: not a whole number of microseconds");
    }
    const auto limit = std::chrono::microseconds(us);
    core->idle_spin_ = std::min(core->idle_spin_, limit);
    core->wait_drive_ = std::min<std::chrono::microseconds>(core->wait_drive_, limit);
    core->inflight_poll_ = std::min<std::chrono::microseconds>(core->inflight_poll_, limit);
  }
  core->initial_limits_ = options.initial_limits;
  core->hello_timeout_ = options.hello_timeout;
  core->max_accepting_ = std::max<size_t>(1, options.max_accepting);
  core->max_accepting_per_source_ = std::max<size_t>(1, options.max_accepting_per_source);
  core->unusable_tls_ = tls_cannot_connect(std::getenv("UCX_TLS"));

  core->worker_per_peer_ = options.worker_per_peer;
  core->shared_memory_possible_ = tls_may_use_shared_memory(std::getenv("UCX_TLS"));
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (const ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
      sockaddr_storage a{};
      std::memcpy(&a, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
      core->local_addresses_.push_back(a);
    }
    freeifaddrs(ifs);
  }
  core->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (core->epoll_fd_ < 0) return failed(std::string("epoll_create1: ") + std::strerror(errno));
  if (Status adopted = core->adopt_worker(core->worker_); !adopted.is_ok()) return adopted;
  core->alive_ = true;
  RGPU_DEBUG("transport=ucx event=init max_am_header=%zu inline_header=%zu rndv_threshold=%zu",
             attr.max_am_header, core->max_inline_header_, core->rndv_threshold_);
  return core;
}

Status Core::watch_efd(ucp_worker_h worker, bool on) {
  int efd = -1;
  const ucs_status_t st = ucp_worker_get_efd(worker, &efd);
  if (st != UCS_OK) return ucx_error("ucp_worker_get_efd", st);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = efd;
  if (epoll_ctl(epoll_fd_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, efd, &ev) != 0) {
    return failed(std::string("epoll_ctl: ") + std::strerror(errno));
  }
  return Status::ok();
}

Status Core::adopt_worker(ucp_worker_h worker) {
  if (Status watched = watch_efd(worker, true); !watched.is_ok()) return watched;
  struct {
    unsigned id;
    ucp_am_recv_callback_t cb;
  } handlers[] = {{kAmMessage, am_message_cb}, {kAmHello, am_hello_cb}, {kAmHelloAck, am_hello_ack_cb}};
  for (const auto& h : handlers) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = h.id;
    hp.cb = h.cb;
    hp.arg = this;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    const ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &hp);
    if (st != UCS_OK) {
      (void)watch_efd(worker, false);
      return ucx_error("ucp_worker_set_am_recv_handler", st);
    }
  }
  return Status::ok();
}

Result<std::shared_ptr<PeerWorker>> Core::make_peer_worker() {
  if (!worker_per_peer_) return std::shared_ptr<PeerWorker>();
  if (!idle_workers_.empty()) {
    std::shared_ptr<PeerWorker> reused = std::move(idle_workers_.back());
    idle_workers_.pop_back();
    if (Status watched = watch_efd(reused->get(), true); !watched.is_ok()) return watched;  // destroyed with it
    peer_workers_.push_back(reused->get());
    return reused;
  }
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_MULTI;
  ucp_worker_h worker = nullptr;
  const ucs_status_t st = ucp_worker_create(context_, &wparams, &worker);
  if (st != UCS_OK) return ucx_error("ucp_worker_create", st);
  if (Status adopted = adopt_worker(worker); !adopted.is_ok()) {
    ucp_worker_destroy(worker);
    return adopted;
  }
  peer_workers_.push_back(worker);
  return std::make_shared<PeerWorker>(shared_from_this(), worker);
}

void Core::retire_worker(ucp_worker_h worker) {
  // Under the lock: shutdown takes it before destroying the main worker.
  std::lock_guard<std::mutex> lock(retired_mu_);
  if (workers_gone_) return;  // shutdown destroyed it with the rest
  retired_.push_back(worker);
  if (!on_progress_thread()) kick();
}

void Core::end_peer_worker(std::shared_ptr<PeerWorker> worker, bool clean) {
  if (worker == nullptr) return;
  if (clean && idle_workers_.size() < kMaxIdleWorkers && !stopping()) {
    // Both sides said bye and every request on it is done: the next
    // connection can have it. Neither progressed nor watched meanwhile.
    (void)watch_efd(worker->get(), false);
    peer_workers_.erase(std::remove(peer_workers_.begin(), peer_workers_.end(), worker->get()), peer_workers_.end());
    idle_workers_.push_back(std::move(worker));
    return;
  }
  ending_.push_back(std::move(worker));
}

void Core::track_detached(DetachedSend* d) {
  std::lock_guard<std::mutex> lock(detached_mu_);
  d->pending = 1;  // the poster's
  detached_.insert(d);
}

void Core::detached_part_started(DetachedSend* d) {
  std::lock_guard<std::mutex> lock(detached_mu_);
  ++d->pending;
}

void Core::detached_part_done(DetachedSend* d, ucs_status_t status) {
  {
    std::lock_guard<std::mutex> lock(detached_mu_);
    if (status != UCS_OK && d->status == UCS_OK) d->status = status;
    if (--d->pending > 0) return;
    detached_.erase(d);
  }
  d->in_flight->fetch_sub(1, std::memory_order_acq_rel);
  // done() may release buffers registered with this transport: not inside
  // UCX's progress, where this may run.
  std::shared_ptr<DetachedSend> owned(d);
  defer([owned] {
    owned->done(owned->status == UCS_OK
                    ? Status::ok()
                    : disconnected(std::string("send failed: ") + ucs_status_string(owned->status)));
  });
}

void Core::abandon_detached(ucp_worker_h worker) {
  std::vector<DetachedSend*> ended;
  {
    std::lock_guard<std::mutex> lock(detached_mu_);
    for (auto it = detached_.begin(); it != detached_.end();) {
      if (worker == nullptr || (*it)->worker == worker) {
        ended.push_back(*it);
        it = detached_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Their worker is gone: no callback can come for them any more.
  for (DetachedSend* d : ended) {
    std::unique_ptr<DetachedSend> owned(d);
    owned->in_flight->fetch_sub(1, std::memory_order_acq_rel);
    owned->done(disconnected("send abandoned: the connection's worker was destroyed"));
  }
}

void Core::destroy_worker(ucp_worker_h worker) {
  int efd = -1;
  if (ucp_worker_get_efd(worker, &efd) == UCS_OK) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, efd, nullptr);
  ucp_worker_destroy(worker);
  abandon_detached(worker);
  peer_workers_.erase(std::remove(peer_workers_.begin(), peer_workers_.end(), worker), peer_workers_.end());
  RGPU_DEBUG("transport=ucx event=peer_worker_destroyed active=%zu idle=%zu", peer_workers_.size(),
             idle_workers_.size());
}

void Core::destroy_retired_workers() {
  while (!ending_.empty()) {
    std::shared_ptr<PeerWorker> worker = std::move(ending_.back());
    ending_.pop_back();
    std::unique_lock<std::shared_mutex> lock(worker->mu_);
    if (worker->gone_) continue;
    destroy_worker(worker->worker_);
    worker->gone_ = true;  // after the destruction: a waiter seeing it knows no callback can follow
  }
  std::vector<ucp_worker_h> retired;
  {
    std::lock_guard<std::mutex> lock(retired_mu_);
    if (retired_.empty()) return;
    retired.swap(retired_);
  }
  for (ucp_worker_h worker : retired) destroy_worker(worker);
}

bool Core::is_local_address(const sockaddr* addr) const {
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) return true;
    for (const auto& a : local_addresses_) {
      if (a.ss_family == AF_INET &&
          reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr == in->sin_addr.s_addr) {
        return true;
      }
    }
  } else if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    for (const auto& a : local_addresses_) {
      if (a.ss_family == AF_INET6 && std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr,
                                                 &in6->sin6_addr, sizeof(in6_addr)) == 0) {
        return true;
      }
    }
  }
  return false;
}

void Core::tend_idle_workers() {
  if (idle_workers_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_idle_tend_) return;
  next_idle_tend_ = now + std::chrono::milliseconds(kIdleSleepMs);
  // What still arrives for an idle worker is its old peer's socket closing:
  // taking it lets UCX close its end.
  for (auto& worker : idle_workers_) {
    for (int i = 0; i < 4 && ucp_worker_progress(worker->get()) != 0; ++i) {
    }
  }
}

unsigned Core::progress_workers() {
  unsigned n = ucp_worker_progress(worker_);
  for (ucp_worker_h worker : peer_workers_) n += ucp_worker_progress(worker);
  return n;
}

ucs_status_t Core::arm_workers() {
  ucs_status_t st = ucp_worker_arm(worker_);
  for (size_t i = 0; st == UCS_OK && i < peer_workers_.size(); ++i) st = ucp_worker_arm(peer_workers_[i]);
  return st;
}

PeerWorker::~PeerWorker() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (!gone_) core_->retire_worker(worker_);
}

Core::~Core() {
  // shutdown() normally ran; this covers a Core that failed half-way in create().
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void Core::start() {
  thread_ = std::thread([this] { run(); });
}

void Core::shutdown() {
  if (!thread_.joinable()) return;
  if (on_progress_thread()) {
    RGPU_ERROR("transport=ucx event=shutdown_from_handler action=leak");
    thread_.detach();
    return;
  }
  post([this] { close_all_locked(); });
  thread_.join();
  std::unique_lock<std::shared_mutex> lock(life_);
  alive_ = false;
  {
    std::lock_guard<std::mutex> c(commands_mu_);
    commands_.clear();
  }
  events_.clear();
  connections_.clear();
  accepting_.clear();
  listeners_.clear();
  {
    std::unique_lock<std::shared_mutex> regs(regs_mu_);
    for (auto& [start, reg] : regs_) ucp_mem_unmap(context_, reg.memh);
    regs_.clear();
  }
  {
    // Payloads may outlive the transport with their peer's worker: it goes
    // now, and their release finds the transport dead (RndvPayload).
    std::lock_guard<std::mutex> retired(retired_mu_);
    workers_gone_ = true;
    retired_.clear();
  }
  for (auto& worker : idle_workers_) {
    std::unique_lock<std::shared_mutex> gone(worker->mu_);
    worker->gone_ = true;
    ucp_worker_destroy(worker->worker_);  // not among the active ones
  }
  idle_workers_.clear();
  for (auto& worker : ending_) {
    std::unique_lock<std::shared_mutex> gone(worker->mu_);
    worker->gone_ = true;  // destroyed below with the rest
  }
  ending_.clear();
  for (ucp_worker_h worker : peer_workers_) ucp_worker_destroy(worker);
  peer_workers_.clear();
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  abandon_detached(nullptr);
  ucp_cleanup(context_);
  context_ = nullptr;
  dead_.store(true, std::memory_order_release);
}

bool Core::post(std::function<void()> fn) {
  if (on_progress_thread()) {
    fn();
    return true;
  }
  std::shared_lock<std::shared_mutex> lock(life_);
  if (!alive_ || stopping()) return false;
  {
    std::lock_guard<std::mutex> c(commands_mu_);
    commands_.push_back(std::move(fn));
  }
  wake_seq_.fetch_add(1, std::memory_order_release);
  ucp_worker_signal(worker_);
  return true;
}

void Core::defer(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> c(commands_mu_);
    commands_.push_back(std::move(fn));
  }
  wake_seq_.fetch_add(1, std::memory_order_release);
  // UCX may report endpoint errors from its own async thread.
  if (!on_progress_thread()) ucp_worker_signal(worker_);
}

void Core::kick() {
  wake_seq_.fetch_add(1, std::memory_order_release);
  ucp_worker_signal(worker_);
}

void Core::run_commands() {
  for (;;) {
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> c(commands_mu_);
      if (commands_.empty()) break;
      batch.swap(commands_);
    }
    for (auto& fn : batch) fn();
  }
  destroy_retired_workers();
}

void Core::progress_or_sleep(int timeout_ms, bool dispatching) {
  const uint64_t seen = wake_seq_.load(std::memory_order_acquire);
  if (progress_workers() != 0) {
    last_activity_ = std::chrono::steady_clock::now();
    backoff_ms_ = 0;
    return;
  }
  if (dispatching && !dispatching_ && !events_.empty()) return;
  const auto idle = std::chrono::steady_clock::now() - last_activity_;
  // Keep polling a little after activity, so that a message that follows
  // soon does not pay a wakeup; bounded, so that an idle transport costs no CPU.
  if (idle < idle_spin_) return;
  if (inflight_.load(std::memory_order_acquire) > 0) {
    // An operation is under way. Some of its steps raise no event (a shared
    // memory FIFO that frees up, for one), so keep polling, yielding the CPU,
    // then sleep in growing steps instead of the full idle timeout.
    if (idle < inflight_poll_) {
      sched_yield();
      return;
    }
    backoff_ms_ = std::clamp(backoff_ms_ * 2, 1, kIdleSleepMs);
    timeout_ms = std::min(timeout_ms, backoff_ms_);
  }
  const ucs_status_t st = arm_workers();
  if (st == UCS_ERR_BUSY) return;
  if (st != UCS_OK) {
    RGPU_ERROR("transport=ucx event=arm_failed status=%s", ucs_status_string(st));
    timeout_ms = std::min(timeout_ms, 1);
  }
  // A post() or kick() after `seen` may have had its signal consumed by arm.
  if (wake_seq_.load(std::memory_order_acquire) != seen) return;
  epoll_event ev;
  release_role();  // a caller may drive the worker while this thread sleeps
  const int n = epoll_wait(epoll_fd_, &ev, 1, timeout_ms);
  acquire_role();
  if (n > 0) last_activity_ = std::chrono::steady_clock::now();
}

void Core::acquire_role() {
  role_mu_.lock();
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

bool Core::try_acquire_role() {
  if (!role_mu_.try_lock()) return false;
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void Core::release_role() {
  thread_id_.store(std::thread::id(), std::memory_order_relaxed);
  role_mu_.unlock();
}

bool Core::drive_until(const std::function<bool()>& done, std::chrono::microseconds budget) {
  if (done()) return true;
  if (on_progress_thread() || budget.count() <= 0) return false;
  std::shared_lock<std::shared_mutex> life(life_);
  if (!alive_) return done();
  const auto deadline = std::chrono::steady_clock::now() + budget;
  drivers_waiting_.fetch_add(1, std::memory_order_acq_rel);
  bool have_role = false;
  bool result = false;
  for (unsigned spins = 0;; ++spins) {
    if (!have_role) have_role = try_acquire_role();
    if (have_role) {
      if (stopping()) break;
      run_commands();
      progress_workers();
      if (!dispatching_) {
        dispatch_events();
      } else {
        // A handler waiting inline on another thread lent the role out
        // (handlers of one transport never nest, so none runs here): hand it
        // straight back, or that handler, and every event queued behind it,
        // waits out this caller's whole budget.
        release_role();
        have_role = false;
        std::this_thread::yield();
      }
    }
    if (done()) {
      result = true;
      break;
    }
    // Checking the clock every few spins keeps the loop tight.
    if ((spins & 15) == 15 && std::chrono::steady_clock::now() >= deadline) break;
  }
  drivers_waiting_.fetch_sub(1, std::memory_order_acq_rel);
  // The progress thread takes over: it either waits for the role (and then
  // polls) or sleeps on the event fd, which new events still signal (UCX
  // keeps it readable until the next arm), so no wakeup is needed here.
  if (have_role) release_role();
  return result || done();
}

void Core::run() {
  acquire_role();
  last_activity_ = std::chrono::steady_clock::now();
  for (;;) {
    if (drivers_waiting_.load(std::memory_order_acquire) > 0) {
      // A caller polls for its own reply: let it have the worker.
      release_role();
      std::this_thread::yield();
      acquire_role();
    }
    run_commands();
    if (!deadlines_.empty()) expire_deadlines();
    tend_idle_workers();
    progress_or_sleep(kIdleSleepMs, true);
    // Not while a handler that waits inline has lent the role out. What the
    // progress deferred runs first: a send's completion that came in the same
    // round as the next message is seen by that message's handler.
    if (!dispatching_) {
      run_commands();
      dispatch_events();
    }
    if (stopping()) {
      bool idle;
      {
        std::lock_guard<std::mutex> c(commands_mu_);
        idle = commands_.empty();
      }
      idle = idle && events_.empty();
      if (idle && (closing_eps_ == 0 || std::chrono::steady_clock::now() > stop_deadline_)) break;
    }
  }
  release_role();
}

void Core::dispatch_events() {
  dispatching_ = true;
  while (!events_.empty()) {
    Event ev = std::move(events_.front());
    events_.pop_front();
    UcxConnection& conn = *ev.conn;
    switch (ev.kind) {
      case Event::kAccept:
        if (!conn.close_reported_ && ev.listener && ev.listener->on_accept) {
          conn.handler_ = ev.listener->on_accept(ev.conn);
        }
        break;
      case Event::kMessage:
        conn.message_dispatched(ev.bytes);
        if (!conn.close_reported_ && conn.handler_.on_message) {
          conn.handler_.on_message(conn, std::move(ev.message));
        }
        break;
      case Event::kPeerBye:
        // Everything the peer sent before its bye has been handed out.
        conn.close_locked(false, disconnected("peer closed the connection"));
        break;
      case Event::kClosed:
        if (!conn.close_reported_) {
          conn.close_reported_ = true;
          ConnectionHandler handler = std::move(conn.handler_);
          conn.handler_ = {};
          if (handler.on_closed) handler.on_closed(conn, ev.status);
        }
        break;
    }
  }
  dispatching_ = false;
}

ucs_status_t Core::wait(Waiter& waiter, const PeerWorker* on) {
  // The worker was destroyed with requests outstanding (their peer died and
  // UCX did not complete them): no callback can come any more.
  auto abandon = [&]() -> ucs_status_t {
    std::lock_guard<std::mutex> lock(waiter.mu);
    for (; waiter.pending > 0; --waiter.pending) request_ended();
    return UCS_ERR_CANCELED;
  };
  if (on_progress_thread()) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(waiter.mu);
        if (waiter.pending == 0) return waiter.status;
      }
      run_commands();
      if (on != nullptr && on->gone()) return abandon();
      progress_or_sleep(kIdleSleepMs, false);
    }
  }
  // Drive the worker here rather than hand every step of the transfer to the
  // progress thread (some steps raise no event, which would leave it to poll
  // and back off); after the budget, sleep and leave it to that thread.
  drive_until(
      [&waiter, on] {
        {
          std::lock_guard<std::mutex> lock(waiter.mu);
          if (waiter.pending == 0) return true;
        }
        return on != nullptr && on->gone();
      },
      wait_drive_);
  std::unique_lock<std::mutex> lock(waiter.mu);
  while (waiter.pending != 0) {
    if (on != nullptr && on->gone()) {
      lock.unlock();
      return abandon();
    }
    waiter.cv.wait_for(lock, std::chrono::milliseconds(kIdleSleepMs));
    if (waiter.pending != 0 && dead_.load(std::memory_order_acquire)) return UCS_ERR_CANCELED;
  }
  return waiter.status;
}

bool Core::wait_until(std::mutex& mu, std::condition_variable& cv, const std::function<bool()>& pred,
                      std::chrono::steady_clock::time_point deadline) {
  if (on_progress_thread()) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (pred()) return true;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      run_commands();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      progress_or_sleep(static_cast<int>(std::clamp<int64_t>(left, 1, kIdleSleepMs)), false);
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  return cv.wait_until(lock, deadline, pred);
}

void Core::close_all_locked() {
  deadlines_.clear();
  stopping_.store(true, std::memory_order_release);
  stop_deadline_ = std::chrono::steady_clock::now() + kShutdownGrace;
  while (!listeners_.empty()) remove_listener(listeners_.back());
  std::vector<std::shared_ptr<UcxConnection>> conns;
  for (auto& [id, conn] : connections_) conns.push_back(conn);
  for (auto& conn : conns) conn->close_locked(true, disconnected("transport shut down"));
  accepting_.clear();
  pre_hello_by_source_.clear();
  pre_hello_ = 0;
}

}  // namespace rgpu::transport::ucx
