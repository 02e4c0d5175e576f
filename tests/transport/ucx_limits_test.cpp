// Receive limits on the real UCX transport: UcxOptions::initial_limits apply
// to accepted and connected connections from the start, and a peer that parks
// frames out of order past max_parked_frames or max_parked_bytes has its
// connection failed instead of growing the receiver's memory; a peer that
// never says hello is dropped. Also the clear error for a UCX_TLS that cannot
// make connections.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <optional>
#include <string>

#include "raw_peer.h"
#include "test_util.h"

namespace rgpu::transport::testing {
namespace {

ReceiveLimits strict() {
  ReceiveLimits l;
  l.max_header = 64 << 10;
  l.max_parked_frames = 64;
  l.max_parked_bytes = 256 << 10;
  return l;
}

std::unique_ptr<Transport> ucx_with(const ReceiveLimits& limits) {
  UcxOptions options;
  options.initial_limits = limits;
  auto t = make_ucx_transport(options);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(t.value()) : nullptr;
}

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(UcxLimits, InitialLimitsApplyToAcceptedConnections) {
  auto server = ucx_with(strict());
  ASSERT_NE(server, nullptr);
  auto server_side = std::make_shared<Recorder>();
  auto l = server->listen("127.0.0.1:0", [server_side](std::shared_ptr<Connection>) {
    return recording_handler(server_side);
  });
  ASSERT_TRUE(l.is_ok());
  auto client = make_transport("ucx");
  ASSERT_NE(client, nullptr);
  auto conn = client->connect(l.value()->address(), {}, 10s);
  ASSERT_TRUE(conn.is_ok());
  // Sent at once: no window in which the defaults would apply.
  (void)conn.value()->send(pattern(70000, 1));
  ASSERT_TRUE(server_side->wait_closed(5s));
  EXPECT_TRUE(mentions(server_side->closed()[0], "max_header (70000 > 65536)"))
      << server_side->closed()[0].to_string();
  EXPECT_EQ(server_side->message_count(), 0u);
}

TEST(UcxLimits, InitialLimitsApplyToConnectedConnections) {
  auto server = make_transport("ucx");
  ASSERT_NE(server, nullptr);
  auto l = server->listen("127.0.0.1:0", [](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [](Connection& c, Message) { (void)c.send(pattern(300000, 2)); };
    return h;
  });
  ASSERT_TRUE(l.is_ok());
  auto client = ucx_with(strict());
  ASSERT_NE(client, nullptr);
  auto client_side = std::make_shared<Recorder>();
  auto conn = client->connect(l.value()->address(), recording_handler(client_side), 10s);
  ASSERT_TRUE(conn.is_ok());
  ASSERT_TRUE(conn.value()->send(bytes_of("answer with a big header")).is_ok());
  ASSERT_TRUE(client_side->wait_closed(5s));
  EXPECT_TRUE(mentions(client_side->closed()[0], "max_header (300000 > 65536)"))
      << client_side->closed()[0].to_string();
}

// A peer sends frames 1, 2, 3, ... and never 0: each is parked.
TEST(UcxLimits, FramesParkedPastTheLimitFailTheConnection) {
  auto server = ucx_with(strict());
  ASSERT_NE(server, nullptr);
  auto server_side = std::make_shared<Recorder>();
  auto l = server->listen("127.0.0.1:0", [server_side](std::shared_ptr<Connection>) {
    return recording_handler(server_side);
  });
  ASSERT_TRUE(l.is_ok());
  RawPeer peer;
  ASSERT_EQ(peer.connect(l.value()->address()), "");
  const std::vector<std::byte> none;
  for (uint64_t seq = 1; seq <= 10000 && !peer.ep_failed(); ++seq) {
    if (!peer.send_frame(ucx::Frame{seq, peer.server_conn_id(), ucx::kHeaderInline}, "parked", none,
                         UCP_AM_SEND_FLAG_REPLY)) {
      break;
    }
  }
  ASSERT_TRUE(server_side->wait_closed(5s));
  EXPECT_TRUE(mentions(server_side->closed()[0], "max_parked_frames (65 > 64)"))
      << server_side->closed()[0].to_string();
  EXPECT_EQ(server_side->message_count(), 0u);
  EXPECT_TRUE(peer.progress_until([&] { return peer.ep_failed(); })) << "the server kept the endpoint";
}

TEST(UcxLimits, BytesParkedPastTheLimitFailTheConnection) {
  auto server = ucx_with(strict());
  ASSERT_NE(server, nullptr);
  auto server_side = std::make_shared<Recorder>();
  auto l = server->listen("127.0.0.1:0", [server_side](std::shared_ptr<Connection>) {
    return recording_handler(server_side);
  });
  ASSERT_TRUE(l.is_ok());
  RawPeer peer;
  ASSERT_EQ(peer.connect(l.value()->address()), "");
  // 16 KiB headers (in the AM data, eager): the bytes run out before the frames.
  const auto header = pattern(16 << 10, 3);
  for (uint64_t seq = 1; seq <= 64 && !peer.ep_failed(); ++seq) {
    if (!peer.send_frame(ucx::Frame{seq, peer.server_conn_id(), ucx::kHeaderInData}, "", header,
                         UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER)) {
      break;
    }
  }
  ASSERT_TRUE(server_side->wait_closed(5s));
  EXPECT_TRUE(mentions(server_side->closed()[0], "max_parked_bytes (278528 > 262144)"))
      << server_side->closed()[0].to_string();
  EXPECT_EQ(server_side->message_count(), 0u);
}

// A peer that connects and never says hello is dropped after hello_timeout;
// one that does is served past it.
TEST(UcxLimits, SilentPeerIsDroppedAfterTheHelloTimeout) {
  UcxOptions options;
  options.hello_timeout = 300ms;
  auto t = make_ucx_transport(options);
  ASSERT_TRUE(t.is_ok());
  auto server_side = std::make_shared<Recorder>();
  auto l = t.value()->listen("127.0.0.1:0", [server_side](std::shared_ptr<Connection>) {
    server_side->add_note("accepted");
    ConnectionHandler h;
    h.on_message = [](Connection& c, Message m) { (void)c.send(m.header); };
    return h;
  });
  ASSERT_TRUE(l.is_ok());
  RawPeer silent;
  ASSERT_EQ(silent.connect(l.value()->address(), false), "");
  RawPeer polite;
  ASSERT_EQ(polite.connect(l.value()->address()), "");
  EXPECT_TRUE(silent.progress_until([&] { return silent.ep_failed(); })) << "the silent peer was kept";
  EXPECT_FALSE(polite.ep_failed());
  ASSERT_TRUE(polite.send_frame(ucx::Frame{0, polite.server_conn_id(), ucx::kHeaderInline}, "still served", {},
                                UCP_AM_SEND_FLAG_REPLY));
  ASSERT_TRUE(polite.progress_until([&] { return !polite.received().empty(); }));
  EXPECT_EQ(polite.received()[0], "still served");
  EXPECT_EQ(server_side->notes().size(), 1u);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(UcxTls, SharedMemoryOnlyTlsFailsWithAClearMessage) {
  ScopedEnv tls("UCX_TLS", "posix,sysv,cma,self");
  auto t = make_ucx_transport();
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  auto l = t.value()->listen("127.0.0.1:0", [](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  ASSERT_FALSE(l.is_ok());
  EXPECT_TRUE(mentions(l.status(), "needs tcp (or rdmacm on InfiniBand) in UCX_TLS")) << l.status().to_string();
  EXPECT_TRUE(mentions(l.status(), "UCX_TLS=posix,sysv,cma,tcp")) << l.status().to_string();
  auto c = t.value()->connect("127.0.0.1:9", {}, 1s);
  ASSERT_FALSE(c.is_ok());
  EXPECT_TRUE(mentions(c.status(), "connection manager needs tcp")) << c.status().to_string();
}

TEST(UcxTls, WhichValuesCanConnect) {
  EXPECT_NE(ucx::tls_cannot_connect("posix,sysv,cma,self"), "");
  EXPECT_NE(ucx::tls_cannot_connect("sm,self"), "");
  EXPECT_NE(ucx::tls_cannot_connect("\\posix,self"), "");
  EXPECT_EQ(ucx::tls_cannot_connect(nullptr), "");
  EXPECT_EQ(ucx::tls_cannot_connect("^tcp"), "");
  EXPECT_EQ(ucx::tls_cannot_connect("posix,sysv,cma,tcp"), "");
  EXPECT_EQ(ucx::tls_cannot_connect("rc,sm,self"), "");
  EXPECT_EQ(ucx::tls_cannot_connect("all"), "");
  EXPECT_EQ(ucx::tls_cannot_connect("sm,rdmacm"), "");
}

TEST(UcxTls, SharedMemoryWithTcpStillListens) {
  ScopedEnv tls("UCX_TLS", "posix,sysv,cma,tcp");
  auto t = make_ucx_transport();
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  auto l = t.value()->listen("127.0.0.1:0", [](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  ASSERT_TRUE(l.is_ok()) << l.status().to_string();
  auto c = t.value()->connect(l.value()->address(), {}, 10s);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
}

}  // namespace
}  // namespace rgpu::transport::testing
