// Peers that die or never answer: a UCX client process killed (SIGKILL) in
// the middle of a rendezvous send must be reported closed within seconds, the
// payload the server still held must fail, and the server must keep serving;
// a connect() to a socket that accepts but never speaks must time out.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_util.h"

extern char** environ;

namespace rgpu::transport::testing {
namespace {

// Starts this test binary as a streaming client of `address`.
pid_t spawn_child(const std::string& address, size_t payload_bytes) {
  std::string self = "/proc/self/exe";
  std::string flag = "--transport-child";
  std::string size = std::to_string(payload_bytes);
  char* argv[] = {self.data(), flag.data(), const_cast<char*>(address.c_str()), size.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0) return -1;
  return pid;
}

// Reaps the child, killing it first if it is still running; bounded.
void reap(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    if (i == 100) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(UcxPeerDeath, KilledClientIsReportedAndServerKeepsServing) {
  auto server = make_transport("ucx");
  ASSERT_NE(server, nullptr);
  auto dead = std::make_shared<Recorder>();   // the killed client's connection
  auto alive = std::make_shared<Recorder>();  // the client that comes after
  auto held = std::make_shared<Recorder>();   // the payload left unreceived
  auto accepted = std::make_shared<std::atomic<int>>(0);
  auto listener = server->listen("127.0.0.1:0", [=](std::shared_ptr<Connection>) {
    const int n = (*accepted)++;
    if (n > 0) {
      ConnectionHandler h = recording_handler(alive);
      h.on_message = [alive](Connection& c, Message m) {
        std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
        if (m.payload && !m.payload->receive(data.data()).is_ok()) return;
        alive->add_message(std::move(m));
        EXPECT_TRUE(c.send(bytes_of("served"), data).is_ok());
      };
      return h;
    }
    ConnectionHandler h;
    auto count = std::make_shared<int>(0);
    h.on_message = [dead, held, count](Connection&, Message m) {
      // Receive two payloads, then keep the third unreceived: the child stays
      // blocked in its rendezvous send until it is killed.
      if (++*count == 3) {
        held->add_message(std::move(m));
        return;
      }
      std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
      if (m.payload) {
        Status st = m.payload->receive(data.data());
        dead->add_note(st.is_ok() ? "ok" : st.to_string());
      }
    };
    h.on_closed = [dead](Connection&, const Status& st) { dead->add_closed(st); };
    return h;
  });
  ASSERT_TRUE(listener.is_ok()) << listener.status().to_string();
  const std::string address = listener.value()->address();

  const pid_t child = spawn_child(address, 16 << 20);
  ASSERT_GT(child, 0);
  const bool got_third = held->wait_messages(1, kWait);
  kill(child, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  reap(child);
  ASSERT_TRUE(got_third) << "the child never got three messages through";
  EXPECT_EQ(dead->notes(), (std::vector<std::string>{"ok", "ok"}));

  ASSERT_TRUE(dead->wait_closed(10s)) << "peer death not reported";
  const auto took = std::chrono::steady_clock::now() - killed_at;
  EXPECT_LT(took, 5s) << "took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_EQ(dead->closed()[0].kind(), ErrorKind::kDisconnected) << dead->closed()[0].to_string();

  // The payload of a dead sender cannot be received, and saying so must not hang.
  auto messages = held->take_messages();
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_NE(messages[0].payload, nullptr);
  std::vector<std::byte> dst(messages[0].payload->size());
  EXPECT_FALSE(messages[0].payload->receive(dst.data()).is_ok());

  // A new client is served normally.
  auto client = make_transport("ucx");
  ASSERT_NE(client, nullptr);
  auto replies = std::make_shared<Recorder>();
  ConnectionHandler h;
  h.on_message = [replies](Connection&, Message m) {
    std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
    if (m.payload && m.payload->receive(data.data()).is_ok()) {
      replies->add_note(data == pattern(data.size(), 4) ? "reply ok" : "reply corrupt");
    } else {
      replies->add_note("reply without payload");
    }
  };
  auto conn = client->connect(address, h, 10s);
  ASSERT_TRUE(conn.is_ok()) << conn.status().to_string();
  ASSERT_TRUE(conn.value()->send(bytes_of("again"), pattern(1 << 20, 4)).is_ok());
  ASSERT_TRUE(replies->wait_notes(1));
  EXPECT_EQ(replies->notes()[0], "reply ok");
  EXPECT_EQ(alive->message_count(), 1u);
}

TEST(UcxPeerDeath, KilledClientStreamingEagerMessagesIsReported) {
  // Small payloads travel eagerly and the server drops them unreceived, so
  // the child is killed while it streams as fast as it can.
  auto server = make_transport("ucx");
  ASSERT_NE(server, nullptr);
  auto r = std::make_shared<Recorder>();
  auto listener = server->listen("127.0.0.1:0", [r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) { r->add_note(string_of(m.header)); };  // payload dropped
    h.on_closed = [r](Connection&, const Status& st) { r->add_closed(st); };
    return h;
  });
  ASSERT_TRUE(listener.is_ok());
  const pid_t child = spawn_child(listener.value()->address(), 100);
  ASSERT_GT(child, 0);
  const bool streaming = r->wait_notes(10);
  kill(child, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  reap(child);
  ASSERT_TRUE(streaming);
  ASSERT_TRUE(r->wait_closed(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, 5s);
}

TEST(UcxPeerDeath, ConnectToSilentListenerTimesOut) {
  // A kernel-level listener that never accepts: the TCP handshake succeeds,
  // UCX's connection manager never hears back.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  auto client = make_transport("ucx");
  ASSERT_NE(client, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto conn = client->connect(address, {}, 700ms);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(conn.is_ok());
  EXPECT_EQ(conn.status().kind(), ErrorKind::kDisconnected) << conn.status().to_string();
  EXPECT_GE(took, 600ms);
  EXPECT_LT(took, 3s);
  client.reset();  // must not hang on the half-open endpoint
  ::close(fd);
}

}  // namespace
}  // namespace rgpu::transport::testing
