// Checks that bulk data really travels through shared memory when the test
// runs with a shared-memory UCX_TLS: the bytes this process hands to socket
// send calls must stay far below the bytes transferred. The test binary
// wraps send() and sendmsg() (below) to count them; the wrappers forward to
// the C library unchanged.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "test_util.h"

namespace {
std::atomic<uint64_t> g_socket_bytes_sent{0};
}  // namespace

extern "C" ssize_t send(int fd, const void* buf, size_t len, int flags) {
  using Fn = ssize_t (*)(int, const void*, size_t, int);
  static const Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "send"));
  const ssize_t n = next(fd, buf, len, flags);
  if (n > 0) g_socket_bytes_sent += static_cast<uint64_t>(n);
  return n;
}

extern "C" ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  using Fn = ssize_t (*)(int, const struct msghdr*, int);
  static const Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "sendmsg"));
  const ssize_t n = next(fd, msg, flags);
  if (n > 0) g_socket_bytes_sent += static_cast<uint64_t>(n);
  return n;
}

namespace rgpu::transport::testing {
namespace {

uint64_t syscall_io_bytes() { return g_socket_bytes_sent.load(); }

// Guards the guard: over tcp the counter must see the bulk transfer.
TEST(UcxShm, SocketCounterSeesTcpTraffic) {
  const char* tls = std::getenv("UCX_TLS");
  if (tls == nullptr || std::string(tls) != "tcp") GTEST_SKIP() << "needs UCX_TLS=tcp";
  auto server = make_transport("ucx");
  auto client = make_transport("ucx");
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  auto r = std::make_shared<Recorder>();
  auto listener = server->listen("127.0.0.1:0", [r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) {
      std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
      r->add_note(m.payload && m.payload->receive(data.data()).is_ok() ? "ok" : "bad");
    };
    return h;
  });
  ASSERT_TRUE(listener.is_ok());
  auto conn = client->connect(listener.value()->address(), {}, 10s);
  ASSERT_TRUE(conn.is_ok()) << conn.status().to_string();
  const uint64_t before = syscall_io_bytes();
  ASSERT_TRUE(conn.value()->send(bytes_of("bulk"), pattern(8 << 20, 8)).is_ok());
  ASSERT_TRUE(r->wait_notes(1));
  EXPECT_GE(syscall_io_bytes() - before, uint64_t{8} << 20);
}

TEST(UcxShm, BulkDataBypassesSockets) {
  const char* tls_env = std::getenv("UCX_TLS");
  const std::string tls = tls_env ? tls_env : "";
  const bool shm = tls.find("posix") != std::string::npos || tls.find("sysv") != std::string::npos ||
                   tls.find("sm") != std::string::npos;
  if (!shm) GTEST_SKIP() << "needs UCX_TLS naming a shared-memory transport";
  auto server = make_transport("ucx");
  auto client = make_transport("ucx");
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  auto r = std::make_shared<Recorder>();
  auto listener = server->listen("127.0.0.1:0", [r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) {
      std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
      const bool ok = m.payload && m.payload->receive(data.data()).is_ok() && data == pattern(data.size(), 8);
      r->add_note(ok ? "ok" : "bad");
    };
    return h;
  });
  ASSERT_TRUE(listener.is_ok());
  auto conn = client->connect(listener.value()->address(), {}, 10s);
  ASSERT_TRUE(conn.is_ok()) << conn.status().to_string();
  const auto data = pattern(64 << 20, 8);
  ASSERT_TRUE(conn.value()->send(bytes_of("warm up"), pattern(1000, 8)).is_ok());
  ASSERT_TRUE(r->wait_notes(1));
  const uint64_t before = syscall_io_bytes();
  ASSERT_TRUE(conn.value()->send(bytes_of("bulk"), data).is_ok());
  ASSERT_TRUE(r->wait_notes(2));
  const uint64_t moved = syscall_io_bytes() - before;
  EXPECT_EQ(r->notes(), (std::vector<std::string>{"ok", "ok"}));
  EXPECT_LT(moved, uint64_t{8} << 20) << "64 MiB went through sockets: " << moved << " bytes sent";
}

}  // namespace
}  // namespace rgpu::transport::testing
