// A hostile peer against the real UCX transport: a raw ucp client that has
// done the transport hello sends frames naming other connections' ids (with
// and without a reply endpoint, byes, huge headers, far sequence numbers).
// A legitimate connection of the same listener must see none of them, stay
// open and keep working.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "raw_peer.h"
#include "test_util.h"

namespace rgpu::transport::testing {
namespace {

// A server that records, per accepted connection, what arrives and echoes
// every message's header back.
struct EchoServer {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Listener> listener;
  std::mutex mu;
  std::vector<std::shared_ptr<Recorder>> accepted;  // in accept order

  std::shared_ptr<Recorder> connection(size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    return i < accepted.size() ? accepted[i] : nullptr;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return accepted.size();
  }
};

std::unique_ptr<EchoServer> start_echo_server(const UcxOptions& options) {
  auto server = std::make_unique<EchoServer>();
  auto t = make_ucx_transport(options);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  if (!t.is_ok()) return nullptr;
  server->transport = std::move(t.value());
  EchoServer* raw = server.get();
  auto l = server->transport->listen("127.0.0.1:0", [raw](std::shared_ptr<Connection>) {
    auto r = std::make_shared<Recorder>();
    {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->accepted.push_back(r);
    }
    ConnectionHandler h = recording_handler(r);
    h.on_message = [r](Connection& c, Message m) {
      // Recorded before it is echoed: a client that has the echo may count
      // on the server's record holding the message.
      const std::vector<std::byte> header(m.header.begin(), m.header.end());
      r->add_message(std::move(m));
      (void)c.send(header);
    };
    return h;
  });
  EXPECT_TRUE(l.is_ok()) << l.status().to_string();
  if (!l.is_ok()) return nullptr;
  server->listener = std::move(l.value());
  return server;
}

bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(UcxSpoof, ForeignFramesNeverReachAnotherConnection) {
  auto server = start_echo_server(UcxOptions{});
  ASSERT_NE(server, nullptr);
  const std::string address = server->listener->address();

  // The legitimate client, served first.
  auto client = make_transport("ucx");
  ASSERT_NE(client, nullptr);
  auto replies = std::make_shared<Recorder>();
  auto legit = client->connect(address, recording_handler(replies), 10s);
  ASSERT_TRUE(legit.is_ok()) << legit.status().to_string();
  ASSERT_TRUE(legit.value()->send(bytes_of("before")).is_ok());
  ASSERT_TRUE(replies->wait_messages(1));
  ASSERT_EQ(server->count(), 1u);
  auto legit_side = server->connection(0);

  RawPeer spoofer;
  ASSERT_EQ(spoofer.connect(address), "");
  ASSERT_TRUE(wait_for([&] { return server->count() == 2; }));
  const uint32_t own_id = spoofer.server_conn_id();
  ASSERT_NE(own_id, 0u);

  const std::vector<std::byte> none;
  const auto big = pattern(8 << 20, 1);  // a header of 8 MiB, by rendezvous
  size_t sent = 0;
  for (uint32_t id = 1; id <= 16; ++id) {
    if (id == own_id) continue;  // its own connection is its own business
    for (uint32_t send_flags : {uint32_t{UCP_AM_SEND_FLAG_REPLY}, uint32_t{0}}) {
      for (uint64_t seq = 0; seq < 4; ++seq) {
        sent += spoofer.send_frame(ucx::Frame{seq, id, ucx::kHeaderInline}, "spoof", none, send_flags);
        sent += spoofer.send_frame(ucx::Frame{seq, id, ucx::kHeaderInline}, "spoof", pattern(100, 2), send_flags);
        sent += spoofer.send_frame(ucx::Frame{seq, id, ucx::kBye}, "", none, send_flags);
        sent += spoofer.send_frame(ucx::Frame{seq, id, ucx::kHeaderPart}, "", pattern(5000, 3), send_flags);
        sent += spoofer.send_frame(ucx::Frame{seq + 1, id, ucx::kHeaderFromPrev}, "", pattern(10, 3), send_flags);
      }
      sent += spoofer.send_frame(ucx::Frame{0, id, ucx::kHeaderInData}, "", big, send_flags);
      sent += spoofer.send_frame(ucx::Frame{uint64_t{1} << 40, id, ucx::kHeaderInline}, "far", none, send_flags);
      sent += spoofer.send_frame(ucx::Frame{1, id, ucx::kHeaderInData | ucx::kBye | 0x40}, "", none, send_flags);
    }
  }
  EXPECT_GT(sent, 0u);
  EXPECT_FALSE(spoofer.ep_failed());

  // The legitimate connection saw nothing of it, is open, and still works.
  ASSERT_TRUE(legit.value()->send(bytes_of("after")).is_ok());
  ASSERT_TRUE(replies->wait_messages(2));
  auto got = legit_side->take_messages();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(string_of(got[0].header), "before");
  EXPECT_EQ(string_of(got[1].header), "after");
  auto back = replies->take_messages();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(string_of(back[1].header), "after");
  EXPECT_TRUE(legit_side->closed().empty()) << legit_side->closed()[0].to_string();
  EXPECT_TRUE(replies->closed().empty()) << replies->closed()[0].to_string();
  // Nor did the spoofer's own connection receive what it addressed elsewhere.
  EXPECT_EQ(server->connection(1)->message_count(), 0u);

  // The spoofer's own connection still follows the rules: a message on it,
  // under its own id, is delivered and answered.
  ASSERT_TRUE(spoofer.send_frame(ucx::Frame{0, own_id, ucx::kHeaderInline}, "mine", none, UCP_AM_SEND_FLAG_REPLY));
  ASSERT_TRUE(spoofer.progress_until([&] { return !spoofer.received().empty(); }));
  EXPECT_EQ(spoofer.received()[0], "mine");
  EXPECT_EQ(legit_side->message_count(), 0u);
}

}  // namespace
}  // namespace rgpu::transport::testing
