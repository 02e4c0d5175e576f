// A bare ucp client that speaks rgpu's wire by hand (its own context, worker
// and endpoint), so that tests can send what rgpu's own sender never would:
// frames naming other connections, frames out of order, malformed frames.
#pragma once

#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rgpu/transport/transport.h"
#include "ucx_internal.h"
#include "wire.h"

namespace rgpu::transport::testing {

// Single-threaded: every call progresses the worker on the calling thread.
class RawPeer {
 public:
  RawPeer() = default;
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  ~RawPeer() {
    if (ep_ != nullptr) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      wait(ucp_ep_close_nbx(ep_, &p));
    }
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
  }

  // Connects to an rgpu UCX listener and, unless told not to, completes the
  // transport hello. Returns an empty string, or what failed.
  std::string connect(const std::string& address, bool hello = true) {
    ucp_config_t* config = nullptr;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return "ucp_config_read";
    // The defaults rgpu's transport sets, so that both sides pick the same lanes.
    if (std::getenv("UCX_MM_ERROR_HANDLING") == nullptr && ucx::tls_may_use_shared_memory(std::getenv("UCX_TLS"))) {
      ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
    }
    if (std::getenv("UCX_RNDV_SCHEME") == nullptr) ucp_config_modify(config, "RNDV_SCHEME", "get_zcopy");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    const ucs_status_t st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) return "ucp_init";
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context_, &wp, &worker_) != UCS_OK) return "ucp_worker_create";
    for (unsigned id : {unsigned{ucx::kAmHelloAck}, unsigned{ucx::kAmMessage}}) {
      ucp_am_handler_param_t hp{};
      hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
      hp.id = id;
      hp.cb = id == ucx::kAmHelloAck ? on_ack : on_message;
      hp.arg = this;
      hp.flags = UCP_AM_FLAG_WHOLE_MSG;
      if (ucp_worker_set_am_recv_handler(worker_, &hp) != UCS_OK) return "ucp_worker_set_am_recv_handler";
    }
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!ucx::resolve(address, &addr, &len).is_ok()) return "resolve";
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
    ep.sockaddr.addrlen = len;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t) { static_cast<RawPeer*>(arg)->ep_failed_ = true; };
    ep.err_handler.arg = this;
    if (ucp_ep_create(worker_, &ep, &ep_) != UCS_OK) return "ucp_ep_create";
    if (!hello) return "";
    hello_ = ucx::Hello{ucx::kHelloMagic, ucx::kWireVersion, 4242, 0};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_REPLY;
    if (!wait(ucp_am_send_nbx(ep_, ucx::kAmHello, &hello_, sizeof(hello_), nullptr, 0, &p))) return "hello";
    if (!progress_until([this] { return server_conn_id_ != 0 || ep_failed_; })) return "no hello ack";
    return ep_failed_ ? "endpoint failed" : "";
  }

  // The server's id for this peer's own connection.
  uint32_t server_conn_id() const { return server_conn_id_; }
  bool ep_failed() const { return ep_failed_; }
  // Headers of the messages the server sent to this peer.
  const std::vector<std::string>& received() const { return received_; }

  // Sends one kAmMessage: `frame`, then `header` in the AM header; `data` as
  // AM data; `send_flags` for ucp_am_send_nbx. True once it completed.
  bool send_frame(const ucx::Frame& frame, const std::string& header, const std::vector<std::byte>& data,
                  uint32_t send_flags) {
    std::vector<std::byte> am(sizeof(frame) + header.size());
    std::memcpy(am.data(), &frame, sizeof(frame));
    std::memcpy(am.data() + sizeof(frame), header.data(), header.size());
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = send_flags;
    return wait(ucp_am_send_nbx(ep_, ucx::kAmMessage, am.data(), am.size(), data.data(), data.size(), &p));
  }

  // Progresses the worker until done() or a bound of seconds; returns done().
  template <class F>
  bool progress_until(F done, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      ucp_worker_progress(worker_);
    }
    return true;
  }

 private:
  static ucs_status_t on_ack(void* arg, const void* header, size_t header_length, void*, size_t,
                             const ucp_am_recv_param_t*) {
    auto* self = static_cast<RawPeer*>(arg);
    ucx::Hello ack{};
    if (header_length == sizeof(ack)) {
      std::memcpy(&ack, header, sizeof(ack));
      if (ack.magic == ucx::kHelloMagic && ack.client_conn_id == 4242) self->server_conn_id_ = ack.server_conn_id;
    }
    return UCS_OK;
  }

  static ucs_status_t on_message(void* arg, const void* header, size_t header_length, void*, size_t,
                                 const ucp_am_recv_param_t*) {
    auto* self = static_cast<RawPeer*>(arg);
    if (header_length >= sizeof(ucx::Frame)) {
      self->received_.emplace_back(static_cast<const char*>(header) + sizeof(ucx::Frame),
                                   header_length - sizeof(ucx::Frame));
    }
    return UCS_OK;
  }

  // Waits for a request (bounded); true when it completed without error.
  bool wait(ucs_status_ptr_t req) {
    if (req == nullptr) return true;
    if (UCS_PTR_IS_ERR(req)) return false;
    ucs_status_t st = UCS_INPROGRESS;
    progress_until([&] { return (st = ucp_request_check_status(req)) != UCS_INPROGRESS; });
    if (st == UCS_INPROGRESS) ucp_request_cancel(worker_, req);
    ucp_request_free(req);
    return st == UCS_OK;
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  ucx::Hello hello_{};
  uint32_t server_conn_id_ = 0;
  bool ep_failed_ = false;
  std::vector<std::string> received_;
};

}  // namespace rgpu::transport::testing
