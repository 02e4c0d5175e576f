// The UCX core's peers: the registry of connections and listeners,
// admission of connection requests (the pre-authentication limits),
// closing endpoints and the deadlines of unfinished hellos and byes; and
// the address helpers (resolve, format_source, format_sockaddr).
#include <netdb.h>
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "rgpu/common/log.h"
#include "ucx_internal.h"

namespace rgpu::transport::ucx {

uint32_t Core::register_connection(std::shared_ptr<UcxConnection> conn) {
  uint32_t id = next_conn_id_;
  while (id == 0 || connections_.count(id) != 0) ++id;
  next_conn_id_ = id + 1;
  conn->set_local_id(id);
  connections_.emplace(id, std::move(conn));
  return id;
}

void Core::unregister_connection(uint32_t id) { connections_.erase(id); }

bool Core::admit_request(const std::string& source) {
  size_t& from_source = pre_hello_by_source_[source];
  if (pre_hello_ >= max_accepting_ || from_source >= max_accepting_per_source_) {
    if (from_source == 0) pre_hello_by_source_.erase(source);
    return false;
  }
  ++pre_hello_;
  ++from_source;
  return true;
}

void Core::release_request(const std::string& source) {
  auto it = pre_hello_by_source_.find(source);
  if (it == pre_hello_by_source_.end() || pre_hello_ == 0) return;
  --pre_hello_;
  if (--it->second == 0) pre_hello_by_source_.erase(it);
}

void Core::add_accepting(ucp_ep_h ep, std::shared_ptr<UcxConnection> conn, std::string source) {
  accepting_[ep] = Accepting{std::move(conn), std::move(source)};
}

std::shared_ptr<UcxConnection> Core::take_accepting(ucp_ep_h ep) {
  auto it = accepting_.find(ep);
  if (it == accepting_.end()) return nullptr;
  std::shared_ptr<UcxConnection> conn = std::move(it->second.conn);
  release_request(it->second.source);
  accepting_.erase(it);
  return conn;
}

void Core::note_rejected(const std::string& source) {
  ++rejected_;
  const auto now = std::chrono::steady_clock::now();
  if (now < rejected_log_at_) return;
  rejected_log_at_ = now + std::chrono::seconds(1);
  RGPU_WARN("transport=ucx event=refuse reason=pre_hello_limit source=%s refused=%llu since_last=%llu "
            "pre_hello=%zu max=%zu max_per_source=%zu",
            source.c_str(), static_cast<unsigned long long>(rejected_),
            static_cast<unsigned long long>(rejected_ - rejected_logged_), pre_hello_, max_accepting_,
            max_accepting_per_source_);
  rejected_logged_ = rejected_;
}

UcxConnection* Core::find_connection(uint32_t id) {
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second.get();
}

void Core::remove_listener(const std::shared_ptr<ListenerState>& l) {
  if (l->listener != nullptr) {
    ucp_listener_destroy(l->listener);
    l->listener = nullptr;
  }
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), l), listeners_.end());
}

ListenerState* Core::find_listener(const ListenerState* raw) {
  for (auto& l : listeners_) {
    if (l.get() == raw) return l.get();
  }
  return nullptr;
}

std::shared_ptr<ListenerState> Core::listener_ptr(const ListenerState* raw) {
  for (auto& l : listeners_) {
    if (l.get() == raw) return l;
  }
  return nullptr;
}

namespace {
struct CloseContext {
  Core* core;
  std::shared_ptr<UcxConnection> conn;  // alive until UCX is done with its endpoint
};
}  // namespace

void Core::close_ep(ucp_ep_h ep, bool force, std::shared_ptr<UcxConnection> conn) {
  auto ctx = std::make_unique<CloseContext>(CloseContext{this, std::move(conn)});
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  p.cb.send = [](void* request, ucs_status_t status, void* user_data) {
    std::unique_ptr<CloseContext> done(static_cast<CloseContext*>(user_data));
    --done->core->closing_eps_;
    if (done->conn != nullptr) done->core->end_peer_worker(done->conn->own_worker_, done->conn->clean_close_);
    ucp_request_free(request);
  };
  p.user_data = ctx.get();
  ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
  if (req == nullptr || UCS_PTR_IS_ERR(req)) {  // closed already; ctx frees the connection
    if (ctx->conn != nullptr) end_peer_worker(ctx->conn->own_worker_, ctx->conn->clean_close_);
    return;
  }
  ++closing_eps_;
  ctx.release();  // owned by the callback, which frees the request
}

void Core::expect_bye_answer(std::shared_ptr<UcxConnection> conn, std::chrono::steady_clock::time_point deadline) {
  deadlines_.push_back(Deadline{deadline, conn, UcxConnection::kClosing});
}

void Core::expect_hello(std::shared_ptr<UcxConnection> conn) {
  deadlines_.push_back(
      Deadline{std::chrono::steady_clock::now() + hello_timeout_, conn, UcxConnection::kConnecting});
}

void Core::close_refused_later(std::shared_ptr<UcxConnection> conn) {
  deadlines_.push_back(
      Deadline{std::chrono::steady_clock::now() + kRefuseDelay, conn, UcxConnection::kConnecting, true});
}

void Core::expire_deadlines() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < deadlines_.size();) {
    std::shared_ptr<UcxConnection> conn = deadlines_[i].conn.lock();
    const int state = deadlines_[i].state;
    if (conn == nullptr || conn->state_.load() != state) {
      deadlines_[i] = std::move(deadlines_.back());
      deadlines_.pop_back();
    } else if (now >= deadlines_[i].at) {
      const bool refused = deadlines_[i].refused;
      deadlines_[i] = std::move(deadlines_.back());
      deadlines_.pop_back();
      if (refused) {
        conn->close_locked(true, disconnected("refused: too many connections before their hello"));
      } else if (state == UcxConnection::kConnecting) {
        RGPU_WARN("transport=ucx event=drop reason=hello_timeout peer=%s conn_id=%u", conn->peer().c_str(),
                  conn->local_id());
        conn->close_locked(true, disconnected("no hello in time"));
      } else {
        conn->close_locked(true, Status::ok());  // force: a flush could wait on the silent peer
      }
    } else {
      ++i;
    }
  }
}

Status resolve(const std::string& host_port, sockaddr_storage* out, socklen_t* len) {
  std::string host;
  uint16_t port = 0;
  if (!split_host_port(host_port, &host, &port)) return invalid_argument("bad address: " + host_port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return invalid_argument("cannot resolve " + host + ": " + gai_strerror(rc));
  const addrinfo* pick = res;
  for (const addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {  // prefer IPv4, as "localhost" listeners do
      pick = a;
      break;
    }
  }
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out, pick->ai_addr, pick->ai_addrlen);
  *len = pick->ai_addrlen;
  freeaddrinfo(res);
  return Status::ok();
}

std::string format_source(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof(buf));
    return buf;
  }
  if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, buf, sizeof(buf));
    return buf;
  }
  return "unknown";
}

std::string format_sockaddr(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    char out[sizeof(buf) + 8];
    std::snprintf(out, sizeof out, "%s:%u", buf, static_cast<unsigned>(ntohs(in->sin_port)));
    return out;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    // snprintf, not operator+: g++ 12 at -O3 misreports string concatenation
    // here as an overlapping memcpy (-Wrestrict).
    char out[sizeof(buf) + 10];
    std::snprintf(out, sizeof out, "[%s]:%u", buf, static_cast<unsigned>(ntohs(in6->sin6_port)));
    return out;
  }
  return "unknown";
}

}  // namespace rgpu::transport::ucx
