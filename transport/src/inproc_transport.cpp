// In-process transport: a pair of queues per connection, each side drained by
// its own thread, so handlers run on a transport thread as they do over UCX.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <mutex>
#include <thread>

#include "rgpu/common/log.h"
#include "rgpu/transport/transport.h"

namespace rgpu::transport {
namespace {

// A payload copied at send time; receive() copies it out.
class InprocPayload final : public IncomingPayload {
 public:
  explicit InprocPayload(Bytes data) : data_(data.begin(), data.end()) {}
  size_t size() const override { return data_.size(); }
  Status receive(void* dst) override {
    if (received_) return invalid_argument("payload already received");
    received_ = true;
    if (!data_.empty()) {
      if (dst == nullptr) return invalid_argument("null receive buffer");
      std::memcpy(dst, data_.data(), data_.size());
    }
    return Status::ok();
  }

 private:
  std::vector<std::byte> data_;
  bool received_ = false;
};

struct Registry;

// One side of an in-process connection. Thread-safe; its handlers run on its
// own thread, which ends after on_closed.
class InprocSide final : public Connection, public std::enable_shared_from_this<InprocSide> {
 public:
  InprocSide(std::string peer_name, ConnectionHandler handler)
      : peer_name_(std::move(peer_name)), handler_(std::move(handler)) {}
  ~InprocSide() override {
    // The last reference may be dropped by the side's own thread as it ends.
    if (thread_.joinable()) {
      if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach();
      } else {
        thread_.join();
      }
    }
  }

  void pair_with(const std::shared_ptr<InprocSide>& peer) { peer_ = peer; }
  void start() { thread_ = std::thread([this] { run(); }); }
  void join() {
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  Status send(Bytes header, Bytes payload) override {
    std::shared_ptr<InprocSide> peer = peer_.lock();
    if (closed_.load(std::memory_order_acquire) || peer == nullptr) {
      return disconnected("connection closed");
    }
    const size_t max_header = peer->max_header();
    if (header.size() > max_header) {
      // The receiver refuses it, as a UCX receiver does: it fails the
      // connection, and this side learns that the peer closed.
      const Status why = failed("peer exceeded max_header (" + std::to_string(header.size()) + " > " +
                                std::to_string(max_header) + ")");
      RGPU_WARN("transport=inproc event=peer_error reason=\"%s\"", why.message().c_str());
      peer->shut(why, disconnected("peer closed the connection"));
      return Status::ok();
    }
    Event ev;
    ev.kind = Event::kMessage;
    ev.message.header.assign(header.begin(), header.end());
    if (!payload.empty()) ev.message.payload = std::make_unique<InprocPayload>(payload);
    if (!peer->enqueue(std::move(ev))) return disconnected("peer closed");
    return Status::ok();
  }

  void close() override { shut(Status::ok(), disconnected("peer closed the connection")); }

  // Closes both sides: this one reports `local`, the peer reports `remote`.
  void shut(const Status& local, const Status& remote) {
    if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    enqueue_closed(local);
    if (std::shared_ptr<InprocSide> peer = peer_.lock()) peer->peer_closed(remote);
  }

  std::string peer() const override { return peer_name_; }

  void set_receive_limits(const ReceiveLimits& limits) override {
    std::lock_guard<std::mutex> lock(mu_);
    max_header_ = limits.max_header;
  }

  // Server side: the first event calls on_accept to obtain the handler.
  void accept_with(std::shared_ptr<AcceptFn> on_accept) {
    Event ev;
    ev.kind = Event::kAccept;
    ev.accept = std::move(on_accept);
    enqueue(std::move(ev));
  }

 private:
  struct Event {
    enum Kind { kMessage, kAccept, kClosed } kind = kMessage;
    Message message;
    Status status;
    std::shared_ptr<AcceptFn> accept;
  };

  size_t max_header() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_header_;
  }

  void peer_closed(const Status& status) {
    if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    enqueue_closed(status);
  }

  void enqueue_closed(const Status& status) {
    Event ev;
    ev.kind = Event::kClosed;
    ev.status = status;
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(ev));
    cv_.notify_one();
  }

  // False once this side has shut down (its queue no longer takes messages).
  bool enqueue(Event ev) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ev.kind == Event::kMessage && closed_.load(std::memory_order_acquire)) return false;
    queue_.push_back(std::move(ev));
    cv_.notify_one();
    return true;
  }

  void run() {
    const std::shared_ptr<InprocSide> self = shared_from_this();  // alive until on_closed returns
    for (;;) {
      Event ev;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        ev = std::move(queue_.front());
        queue_.pop_front();
      }
      switch (ev.kind) {
        case Event::kAccept:
          handler_ = (*ev.accept)(shared_from_this());
          break;
        case Event::kMessage:
          if (handler_.on_message) handler_.on_message(*this, std::move(ev.message));
          break;
        case Event::kClosed: {
          ConnectionHandler handler = std::move(handler_);
          handler_ = {};
          if (handler.on_closed) handler.on_closed(*this, ev.status);
          return;
        }
      }
    }
  }

  const std::string peer_name_;
  ConnectionHandler handler_;  // touched only by thread_
  std::weak_ptr<InprocSide> peer_;
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> queue_;
  size_t max_header_ = ReceiveLimits{}.max_header;  // guarded by mu_
  std::thread thread_;
};

// Names and connections of one transport, shared with its listeners.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<AcceptFn>> listeners;
  std::vector<std::shared_ptr<InprocSide>> sides;
  bool shut_down = false;
};

class InprocListener final : public Listener {
 public:
  InprocListener(std::shared_ptr<Registry> registry, std::string name)
      : registry_(std::move(registry)), name_(std::move(name)) {}
  ~InprocListener() override {
    std::lock_guard<std::mutex> lock(registry_->mu);
    registry_->listeners.erase(name_);
  }
  std::string address() const override { return name_; }

 private:
  std::shared_ptr<Registry> registry_;
  std::string name_;
};

// Thread-safe; destroying it closes every connection and joins their threads.
class InprocTransport final : public Transport {
 public:
  ~InprocTransport() override {
    std::vector<std::shared_ptr<InprocSide>> sides;
    {
      std::lock_guard<std::mutex> lock(registry_->mu);
      registry_->shut_down = true;
      registry_->listeners.clear();
      sides.swap(registry_->sides);
    }
    for (auto& side : sides) side->shut(disconnected("transport shut down"), disconnected("transport shut down"));
    for (auto& side : sides) side->join();
  }

  Result<std::unique_ptr<Listener>> listen(const std::string& host_port, AcceptFn on_accept) override {
    std::string host;
    uint16_t port = 0;
    if (!split_host_port(host_port, &host, &port)) return invalid_argument("bad address: " + host_port);
    if (!on_accept) return invalid_argument("listen needs an accept callback");
    std::lock_guard<std::mutex> lock(registry_->mu);
    std::string name = host_port;
    if (port == 0) name = host + ":" + std::to_string(next_port_++);
    if (registry_->listeners.count(name) != 0) return failed("address in use: " + name);
    registry_->listeners[name] = std::make_shared<AcceptFn>(std::move(on_accept));
    return std::unique_ptr<Listener>(std::make_unique<InprocListener>(registry_, name));
  }

  Result<std::shared_ptr<Connection>> connect(const std::string& host_port, ConnectionHandler handler,
                                              std::chrono::milliseconds timeout) override {
    std::string host;
    uint16_t port = 0;
    if (!split_host_port(host_port, &host, &port)) return invalid_argument("bad address: " + host_port);
    std::lock_guard<std::mutex> lock(registry_->mu);
    if (registry_->shut_down) return disconnected("transport shut down");
    auto it = registry_->listeners.find(host_port);
    if (it == registry_->listeners.end()) return disconnected("nobody listens at " + host_port);
    const std::string client_name = "inproc:" + std::to_string(next_client_++);
    auto client = std::make_shared<InprocSide>(host_port, std::move(handler));
    auto server = std::make_shared<InprocSide>(client_name, ConnectionHandler{});
    client->pair_with(server);
    server->pair_with(client);
    server->accept_with(it->second);
    server->start();
    client->start();
    registry_->sides.push_back(server);
    registry_->sides.push_back(client);
    return std::shared_ptr<Connection>(client);
  }

  const char* name() const override { return "inproc"; }

 private:
  std::shared_ptr<Registry> registry_ = std::make_shared<Registry>();
  uint32_t next_port_ = 40000;  // guarded by registry_->mu
  uint64_t next_client_ = 1;    // guarded by registry_->mu
};

}  // namespace

std::unique_ptr<Transport> make_inproc_transport() { return std::make_unique<InprocTransport>(); }

}  // namespace rgpu::transport
