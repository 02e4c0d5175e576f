// Framing, bounded decoding and blocking TCP channels for the pool protocol.
#include "rgpu/pool/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <kj/exception.h>

namespace rgpu::pool::net {

std::vector<std::byte> frame(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  const size_t n = words.size() * sizeof(capnp::word);
  std::vector<std::byte> out(kFrameHeader + n);
  const uint32_t len = static_cast<uint32_t>(n);
  for (size_t i = 0; i < kFrameHeader; ++i) out[i] = static_cast<std::byte>((len >> (8 * i)) & 0xff);
  std::memcpy(out.data() + kFrameHeader, words.begin(), n);
  return out;
}

Result<Message> decode_body(std::vector<capnp::word> words) {
  if (words.empty()) return invalid_argument("empty pool message");
  Message m;
  m.words_ = std::move(words);
  capnp::ReaderOptions options;
  // Twice the message's size: a message may not make the reader walk more
  // than it sent (no amplification through shared pointers).
  options.traversalLimitInWords = 2 * m.words_.size() + 16;
  options.nestingLimit = 16;
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&] {
    m.reader_ = std::make_shared<capnp::FlatArrayMessageReader>(kj::arrayPtr(m.words_.data(), m.words_.size()),
                                                                options);
    m.root_ = m.reader_->getRoot<poolwire::PoolMessage>();
    (void)m.root_.totalSize();
    (void)m.root_.which();
  });
  KJ_IF_MAYBE(e, error) {
    return invalid_argument(std::string("malformed pool message: ") + e->getDescription().cStr());
  }
  return m;
}

Result<std::optional<Message>> FrameReader::next() {
  if (buffer_.size() < kFrameHeader) return std::optional<Message>();
  uint32_t len = 0;
  for (size_t i = 0; i < kFrameHeader; ++i) len |= static_cast<uint32_t>(buffer_[i]) << (8 * i);
  if (len > max_frame_) {
    return invalid_argument("pool frame of " + std::to_string(len) + " bytes is over the limit of " +
                            std::to_string(max_frame_));
  }
  if (len % sizeof(capnp::word) != 0 || len == 0) {
    return invalid_argument("pool frame of " + std::to_string(len) + " bytes is not a whole number of words");
  }
  if (buffer_.size() < kFrameHeader + len) return std::optional<Message>();
  std::vector<capnp::word> words(len / sizeof(capnp::word));
  std::memcpy(words.data(), buffer_.data() + kFrameHeader, len);
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(kFrameHeader + len));
  auto m = decode_body(std::move(words));
  if (!m.is_ok()) return m.status();
  return std::optional<Message>(std::move(m.value()));
}

bool split_address(const std::string& address, std::string* host, uint16_t* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= address.size()) return false;
  const std::string p = address.substr(colon + 1);
  if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  const unsigned long v = std::stoul(p);
  if (v > 65535) return false;
  *host = address.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  *port = static_cast<uint16_t>(v);
  return true;
}

Result<std::vector<std::string>> parse_addresses(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    std::string host;
    uint16_t port = 0;
    if (!split_address(item, &host, &port)) {
      return invalid_argument("pool address '" + item + "' is not HOST:PORT (in '" + list + "')");
    }
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > 16) return invalid_argument("more than 16 pool addresses in '" + list + "'");
  return out;
}

namespace {

Result<addrinfo*> resolve(const std::string& address, bool passive) {
  std::string host;
  uint16_t port = 0;
  if (!split_address(address, &host, &port)) return invalid_argument("'" + address + "' is not HOST:PORT");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) return failed("cannot resolve '" + address + "': " + gai_strerror(rc));
  return res;
}

std::string describe_bound(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
  port = ntohs(in6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

// Connects within `timeout`; the socket is blocking afterwards.
Result<int> dial(const std::string& address, std::chrono::milliseconds timeout) {
  auto res = resolve(address, false);
  if (!res.is_ok()) return res.status();
  std::string why = "no address";
  for (addrinfo* ai = res.value(); ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = poll(&p, 1, static_cast<int>(timeout.count()));
      if (ready == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        if (ready == 0) errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      freeaddrinfo(res.value());
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res.value());
  return disconnected("cannot connect to the pool at " + address + ": " + why);
}

}  // namespace

Result<int> listen_on(const std::string& address, std::string* bound) {
  auto res = resolve(address, true);
  if (!res.is_ok()) return res.status();
  std::string why = "no address";
  for (addrinfo* ai = res.value(); ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      *bound = describe_bound(fd);
      freeaddrinfo(res.value());
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res.value());
  return failed("cannot listen on " + address + ": " + why);
}

Result<std::unique_ptr<Channel>> Channel::connect(const std::vector<std::string>& addresses,
                                                  std::chrono::milliseconds timeout, size_t max_frame) {
  Status last = invalid_argument("no pool address");
  for (const std::string& a : addresses) {
    auto fd = dial(a, timeout);
    if (fd.is_ok()) return std::unique_ptr<Channel>(new Channel(fd.value(), a, max_frame));
    last = fd.status();
  }
  return last;
}

Channel::~Channel() {
  if (fd_ >= 0) close(fd_);
}

Status Channel::send(capnp::MessageBuilder& message) {
  const auto bytes = frame(message);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return disconnected("pool connection to " + address_ + " lost: " + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return Status();
}

Result<std::optional<Message>> Channel::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto m = reader_.next();
    if (!m.is_ok() || m.value()) return m;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return std::optional<Message>();
    std::byte buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return disconnected("the pool at " + address_ + " closed the connection");
    reader_.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace rgpu::pool::net
