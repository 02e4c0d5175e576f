// A peer on the path, inside the client process: preloaded beside rgpu's
// client library, it rewrites every copy of a 16-byte marker in the bytes the
// process sends over sockets (send, sendto, sendmsg, write, writev), as a
// rewriting proxy on the wire would. UCX's tcp transport sends through these
// calls, so the marker is changed after rgpu sealed the message. At exit it
// prints how many markers it changed (tamper_test.py).
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr char kFrom[] = "RGPU-TAMPER-ME!!";
constexpr char kTo[] = "RGPU-TAMPERED!!!";
constexpr size_t kLen = sizeof(kFrom) - 1;
static_assert(sizeof(kFrom) == sizeof(kTo));

std::atomic<long> g_changed{0};

bool is_socket(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

// A copy of [data, data + size) with each marker rewritten, or empty when
// there is none (the caller then sends the original).
std::vector<char> rewritten(const void* data, size_t size) {
  std::vector<char> out;
  const char* p = static_cast<const char*>(data);
  if (size < kLen || memmem(p, size, kFrom, kLen) == nullptr) return out;
  out.assign(p, p + size);
  for (char* at = out.data(); (at = static_cast<char*>(memmem(at, out.data() + out.size() - at, kFrom, kLen)));
       at += kLen) {
    std::memcpy(at, kTo, kLen);
    g_changed.fetch_add(1, std::memory_order_relaxed);
  }
  return out;
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

struct Report {
  ~Report() { std::fprintf(stderr, "rewriter: changed %ld markers\n", g_changed.load()); }
} g_report;

// The iovecs of one send, each rewritten where it holds a marker.
struct Iovs {
  std::vector<iovec> iov;
  std::vector<std::vector<char>> owned;
  Iovs(const iovec* in, size_t n) : iov(in, in + n), owned(n) {
    for (size_t i = 0; i < n; ++i) {
      owned[i] = rewritten(in[i].iov_base, in[i].iov_len);
      if (!owned[i].empty()) iov[i].iov_base = owned[i].data();
    }
  }
};

}  // namespace

extern "C" {

ssize_t send(int fd, const void* buf, size_t len, int flags) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, int)>("send");
  auto copy = rewritten(buf, len);
  return real(fd, copy.empty() ? buf : copy.data(), len, flags);
}

ssize_t sendto(int fd, const void* buf, size_t len, int flags, const struct sockaddr* to, socklen_t tolen) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t)>("sendto");
  auto copy = rewritten(buf, len);
  return real(fd, copy.empty() ? buf : copy.data(), len, flags, to, tolen);
}

ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  static auto real = next<ssize_t (*)(int, const struct msghdr*, int)>("sendmsg");
  Iovs iovs(msg->msg_iov, msg->msg_iovlen);
  struct msghdr copy = *msg;
  copy.msg_iov = iovs.iov.data();
  return real(fd, &copy, flags);
}

ssize_t write(int fd, const void* buf, size_t len) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (!is_socket(fd)) return real(fd, buf, len);
  auto copy = rewritten(buf, len);
  return real(fd, copy.empty() ? buf : copy.data(), len);
}

ssize_t writev(int fd, const struct iovec* iov, int n) {
  static auto real = next<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (!is_socket(fd) || n <= 0) return real(fd, iov, n);
  Iovs iovs(iov, static_cast<size_t>(n));
  return real(fd, iovs.iov.data(), n);
}

}  // extern "C"
