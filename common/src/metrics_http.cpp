// HttpExporter: one thread waits on the listening socket and on every
// connection at once (epoll), reads each request into a bounded buffer and
// answers it when it is whole. A peer that opens connections and trickles
// bytes into them therefore holds sockets, not threads, and only until its
// request's deadline; the limits per address and in all make room for a new
// connection by closing the oldest idle one.
//
// Why not cpp-httplib's server (the client side of it is used elsewhere):
// it hands every accepted connection to a pool thread before a byte of the
// request has arrived, and its time limits apply to each read, so a few
// connections that send a byte now and then hold every thread (docs/
// metrics.md, "Limits"). The part that must be right here, the admission
// and the time limits, is the accept loop that library keeps private; the
// HTTP a scrape needs (a request line, headers, a Content-Length answer) is
// small.
#include "rgpu/common/metrics_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_map>

namespace rgpu::metrics {

bool split_http_address(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  std::string h = text.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string::npos) {
    return false;  // an IPv6 address needs its brackets
  }
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (*end != '\0' || v < 0 || v > 65535) return false;
  *host = h;
  *port = static_cast<int>(v);
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// A request line and its headers; anything longer is refused (431).
constexpr size_t kMaxRequest = 8 * 1024;
// How long, and how many bytes, a connection closed after its answer is
// read for before it is cut.
constexpr std::chrono::milliseconds kDrainTime{1000};
constexpr size_t kDrainBytes = 1 << 20;
// epoll keys of the two sockets that are not connections.
constexpr uint64_t kListenKey = 0;
constexpr uint64_t kStopKey = 1;

struct Connection {
  int fd = -1;
  std::string peer;         // the remote address, without its port
  bool answering = false;   // an answer is being written; nothing is read meanwhile
  bool close_after = false; // closed once the answer is written
  bool draining = false;    // answered for the last time: what the peer still sends is read and dropped
  size_t dropped = 0;
  std::string in;           // bytes read and not yet taken as a request
  std::string out;          // the answer being written
  size_t out_sent = 0;
  size_t served = 0;
  Clock::time_point deadline;  // for the request being read, or the answer being written
};

std::string peer_address(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, text, sizeof text);
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, text, sizeof text);
  }
  return text;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// An answer: the status line, the headers a client needs, the body (left
// out for HEAD, its length kept).
std::string answer(int status, const char* reason, const char* type, const std::string& body, bool head, bool close,
                   const char* extra_header = nullptr) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
  out += std::string("Content-Type: ") + type + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (extra_header != nullptr) out += std::string(extra_header) + "\r\n";
  out += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  if (!head) out += body;
  return out;
}

class HttpExporterImpl final : public HttpExporter {
 public:
  HttpExporterImpl(const Registry& registry, const HttpOptions& options) : registry_(registry), options_(options) {
    options_.max_connections = std::max<size_t>(1, options_.max_connections);
    options_.max_connections_per_address = std::max<size_t>(1, options_.max_connections_per_address);
    options_.keep_alive_requests = std::max<size_t>(1, options_.keep_alive_requests);
  }

  ~HttpExporterImpl() override {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      if (write(stop_, &one, sizeof one) < 0) {
        // The eventfd cannot be full after one write; nothing else to do.
      }
      thread_.join();
    }
    for (auto& [key, c] : connections_) ::close(c.fd);
    if (listen_ >= 0) ::close(listen_);
    if (stop_ >= 0) ::close(stop_);
    if (epoll_ >= 0) ::close(epoll_);
  }

  Status bind(const std::string& host_port) {
    std::string host;
    int port = 0;
    if (!split_http_address(host_port, &host, &port)) {
      return invalid_argument("metrics address must be HOST:PORT, got '" + host_port + "'");
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
      return failed("cannot bind the metrics endpoint to " + host_port + ": unknown host");
    }
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr && listen_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      // SO_REUSEADDR only: with SO_REUSEPORT a second process could bind the
      // same port and take half the scrapes.
      const int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
        listen_ = fd;
      } else {
        why = std::strerror(errno);
        ::close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_ < 0) return failed("cannot bind the metrics endpoint to " + host_port + ": " + why);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(listen_, reinterpret_cast<sockaddr*>(&bound), &len);
    const int bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                                      : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
    address_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(bound_port);

    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    stop_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || stop_ < 0 || !watch(listen_, kListenKey, EPOLLIN, EPOLL_CTL_ADD) ||
        !watch(stop_, kStopKey, EPOLLIN, EPOLL_CTL_ADD)) {
      return failed("the metrics endpoint on " + host_port + " did not start: " + std::strerror(errno));
    }
    thread_ = std::thread([this] { run(); });
    return Status::ok();
  }

  std::string address() const override { return address_; }

 private:
  bool watch(int fd, uint64_t key, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    return epoll_ctl(epoll_, op, fd, &ev) == 0;
  }

  void run() {
    epoll_event events[64];
    for (;;) {
      const int n = epoll_wait(epoll_, events, 64, wait_ms());
      if (n < 0 && errno != EINTR) return;
      for (int i = 0; i < n; ++i) {
        const uint64_t key = events[i].data.u64;
        if (key == kStopKey) return;
        if (key == kListenKey) {
          accept_all();
          continue;
        }
        // A key closed earlier in this batch is gone from the table: keys
        // are never reused, unlike descriptors.
        auto it = connections_.find(key);
        if (it == connections_.end()) continue;
        Connection& c = it->second;
        if (c.answering) {
          write_some(key, c);
          // Written: the requests pipelined behind it, if any.
          it = connections_.find(key);
          if (it != connections_.end() && !it->second.answering) take_requests(key, it->second);
        } else if (c.draining) {
          drain(key, c);
        } else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
          read_some(key, c);
        }
      }
      expire();
      if (paused_ && Clock::now() >= resume_at_) {
        paused_ = !watch(listen_, kListenKey, EPOLLIN, EPOLL_CTL_ADD);
      }
    }
  }

  // Until the nearest deadline, at most a second.
  int wait_ms() const {
    auto next = Clock::now() + std::chrono::seconds(1);
    for (const auto& [key, c] : connections_) next = std::min(next, c.deadline);
    if (paused_) next = std::min(next, resume_at_);
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::max<long long>(0, ms));
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = accept4(listen_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: make room if an idle connection can go,
          // otherwise stop accepting for a moment (a level-triggered listen
          // would spin).
          if (evict_oldest_idle(nullptr)) continue;
          if (epoll_ctl(epoll_, EPOLL_CTL_DEL, listen_, nullptr) == 0) {
            paused_ = true;
            resume_at_ = Clock::now() + std::chrono::milliseconds(100);
          }
        }
        return;
      }
      std::string peer = peer_address(ss);
      if (connections_.size() >= options_.max_connections && !evict_oldest_idle(nullptr)) {
        ::close(fd);
        continue;
      }
      auto held = per_address_.find(peer);
      if (held != per_address_.end() && held->second >= options_.max_connections_per_address &&
          !evict_oldest_idle(&peer)) {
        ::close(fd);
        continue;
      }
      const uint64_t key = next_key_++;
      Connection& c = connections_[key];
      c.fd = fd;
      c.peer = std::move(peer);
      c.deadline = Clock::now() + options_.request_timeout;
      ++per_address_[c.peer];
      if (!watch(fd, key, EPOLLIN, EPOLL_CTL_ADD)) close_connection(key);
    }
  }

  // Closes the oldest connection (of `peer`, when given) that is waiting
  // for a request; false when there is none.
  bool evict_oldest_idle(const std::string* peer) {
    for (auto& [key, c] : connections_) {  // in key order: oldest first
      if (c.answering || (peer != nullptr && c.peer != *peer)) continue;
      close_connection(key);
      return true;
    }
    return false;
  }

  void close_connection(uint64_t key) {
    auto it = connections_.find(key);
    if (it == connections_.end()) return;
    ::close(it->second.fd);  // also removes it from the epoll set
    auto count = per_address_.find(it->second.peer);
    if (count != per_address_.end() && --count->second == 0) per_address_.erase(count);
    connections_.erase(it);
  }

  void expire() {
    const auto now = Clock::now();
    std::vector<uint64_t> late;
    for (const auto& [key, c] : connections_) {
      if (c.deadline <= now) late.push_back(key);
    }
    for (uint64_t key : late) close_connection(key);
  }

  void read_some(uint64_t key, Connection& c) {
    char buf[4096];
    // Read no more than a request can hold, and a little more to see that
    // it is too long; the rest waits in the socket.
    while (c.in.size() <= kMaxRequest) {
      const ssize_t r = recv(c.fd, buf, sizeof buf, 0);
      if (r > 0) {
        c.in.append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_connection(key);  // the peer closed, or the socket failed
      return;
    }
    take_requests(key, c);
  }

  void drain(uint64_t key, Connection& c) {
    char buf[4096];
    for (;;) {
      const ssize_t r = recv(c.fd, buf, sizeof buf, 0);
      if (r > 0 && (c.dropped += static_cast<size_t>(r)) <= kDrainBytes) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close_connection(key);  // the peer closed, failed, or sent too much
      return;
    }
  }

  // Answers the request at the front of `c.in` when it is whole (and the
  // ones pipelined behind it, one after the other).
  void take_requests(uint64_t key, Connection& c) {
    while (!c.answering && !c.draining) {
      const size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos && c.in.size() <= kMaxRequest) return;  // not yet whole
      if (end == std::string::npos || end + 4 > kMaxRequest) {
        c.close_after = true;
        start_answer(key, c, answer(431, "Request Header Fields Too Large", "text/plain",
                                    "request line and headers are limited to 8 KiB\n", false, true));
        return;
      }
      const std::string head = c.in.substr(0, end);
      c.in.erase(0, end + 4);
      ++c.served;
      start_answer(key, c, respond(head, c));
      if (connections_.find(key) == connections_.end()) return;  // answered and closed
    }
  }

  // The answer to one request (its line and headers in `head`).
  std::string respond(const std::string& head, Connection& c) {
    const size_t line_end = head.find("\r\n");
    const std::string line = head.substr(0, line_end);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos || line.find(' ', sp2 + 1) != std::string::npos) {
      c.close_after = true;
      return answer(400, "Bad Request", "text/plain", "malformed request line\n", false, true);
    }
    const std::string method = line.substr(0, sp1);
    const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string version = line.substr(sp2 + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      c.close_after = true;
      return answer(505, "HTTP Version Not Supported", "text/plain", "HTTP/1.0 or HTTP/1.1 only\n", false, true);
    }
    bool keep_alive = version == "HTTP/1.1";
    bool has_body = false;
    size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
    while (at < head.size()) {
      size_t next = head.find("\r\n", at);
      if (next == std::string::npos) next = head.size();
      const std::string field = head.substr(at, next - at);
      at = next + 2;
      const size_t colon = field.find(':');
      if (colon == std::string::npos || colon == 0) {
        c.close_after = true;
        return answer(400, "Bad Request", "text/plain", "malformed header\n", false, true);
      }
      const std::string name = lower(field.substr(0, colon));  // field names ignore case
      const std::string value = lower(trim(field.substr(colon + 1)));
      if (name == "content-length") {
        has_body = has_body || value != "0";
      } else if (name == "transfer-encoding") {
        has_body = true;
      } else if (name == "connection") {
        if (value.find("close") != std::string::npos) keep_alive = false;
        if (value.find("keep-alive") != std::string::npos) keep_alive = true;
      }
    }
    if (has_body) {
      // No body is read: the bytes that follow could not be told from the
      // next request.
      c.close_after = true;
      return answer(413, "Payload Too Large", "text/plain", "requests have no body here\n", false, true);
    }
    c.close_after = !keep_alive || c.served >= options_.keep_alive_requests;
    const bool close = c.close_after;
    const std::string path = target.substr(0, target.find('?'));
    const bool head_only = method == "HEAD";
    if (path != "/metrics") {
      return answer(404, "Not Found", "text/plain", "not found: only /metrics is served\n", head_only, close);
    }
    if (method != "GET" && !head_only) {
      return answer(405, "Method Not Allowed", "text/plain", "method not allowed\n", false, close, "Allow: GET, HEAD");
    }
    return answer(200, "OK", "text/plain; version=0.0.4; charset=utf-8", registry_.render(), head_only, close);
  }

  void start_answer(uint64_t key, Connection& c, std::string text) {
    c.out = std::move(text);
    c.out_sent = 0;
    c.answering = true;
    c.deadline = Clock::now() + options_.write_timeout;
    write_some(key, c);
  }

  void write_some(uint64_t key, Connection& c) {
    while (c.out_sent < c.out.size()) {
      const ssize_t w = send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
      if (w > 0) {
        c.out_sent += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!watch(c.fd, key, EPOLLOUT, EPOLL_CTL_MOD)) close_connection(key);
        return;
      }
      close_connection(key);
      return;
    }
    if (c.close_after) {
      // Closing with unread bytes (a refused request's body or the rest of
      // its headers) would reset the connection, and the peer could lose
      // the answer: end our side and read until the peer closes, briefly.
      shutdown(c.fd, SHUT_WR);
      c.answering = false;
      c.draining = true;
      c.in.clear();
      c.deadline = Clock::now() + std::min<std::chrono::milliseconds>(options_.request_timeout, kDrainTime);
      if (!watch(c.fd, key, EPOLLIN, EPOLL_CTL_MOD)) close_connection(key);
      return;
    }
    // Written: wait for the next request on this connection (the caller
    // takes one already read).
    c.answering = false;
    c.out.clear();
    c.deadline = Clock::now() + options_.request_timeout;
    if (!watch(c.fd, key, EPOLLIN, EPOLL_CTL_MOD)) close_connection(key);
  }

  const Registry& registry_;
  HttpOptions options_;
  std::string address_;
  int listen_ = -1;
  int epoll_ = -1;
  int stop_ = -1;
  bool paused_ = false;  // accepting stopped for a moment (out of descriptors)
  Clock::time_point resume_at_;
  // The loop thread's alone after start.
  std::map<uint64_t, Connection> connections_;  // by key: oldest first
  std::unordered_map<std::string, size_t> per_address_;
  uint64_t next_key_ = 2;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<HttpExporter>> HttpExporter::start(const Registry& registry, const std::string& host_port,
                                                          HttpOptions options) {
  auto exporter = std::make_unique<HttpExporterImpl>(registry, options);
  if (Status s = exporter->bind(host_port); !s.is_ok()) return s;
  return std::unique_ptr<HttpExporter>(std::move(exporter));
}

}  // namespace rgpu::metrics
