// The transport conformance suite: every test runs against each transport
// (in-process, UCX with its own thresholds, UCX with rendezvous from 4 KiB).
// Which UCX transports carry the data is chosen by UCX_TLS, set per ctest entry.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstring>
#include <thread>

#include "test_util.h"

namespace rgpu::transport::testing {
namespace {

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = make_transport(GetParam());
    ASSERT_NE(server_, nullptr);
    if (GetParam() != "inproc") {
      client_ = make_transport(GetParam());
      ASSERT_NE(client_, nullptr);
    }
  }
  void TearDown() override {
    client_.reset();
    listener_.reset();
    server_.reset();
  }

  Transport& client() { return client_ ? *client_ : *server_; }

  // Listens on an ephemeral loopback port; returns the address to connect to.
  std::string listen(AcceptFn on_accept) {
    auto l = server_->listen("127.0.0.1:0", std::move(on_accept));
    EXPECT_TRUE(l.is_ok()) << l.status().to_string();
    if (!l.is_ok()) return "";
    listener_ = std::move(l.value());
    return listener_->address();
  }

  // A server that records every message (payload untouched) into `r`.
  std::string listen_recording(std::shared_ptr<Recorder> r) {
    return listen([r](std::shared_ptr<Connection>) { return recording_handler(r); });
  }

  // A server that sends every message back, payload included, from its handler.
  std::string listen_echo() {
    return listen([](std::shared_ptr<Connection>) {
      ConnectionHandler h;
      h.on_message = [](Connection& c, Message m) {
        std::vector<std::byte> data;
        if (m.payload) {
          data.resize(m.payload->size());
          Status st = m.payload->receive(data.data());
          ASSERT_TRUE(st.is_ok()) << st.to_string();
        }
        Status st = c.send(m.header, data);
        EXPECT_TRUE(st.is_ok()) << st.to_string();
      };
      return h;
    });
  }

  std::shared_ptr<Connection> connect(const std::string& address, ConnectionHandler handler) {
    auto c = client().connect(address, std::move(handler), 10s);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? c.value() : nullptr;
  }

  std::unique_ptr<Transport> server_;
  std::unique_ptr<Transport> client_;
  std::unique_ptr<Listener> listener_;
};

// A server handler that receives every payload inside the handler and checks
// it against pattern(size, seed) where the header is "seed:size"; it notes
// "ok" or what went wrong, in arrival order.
AcceptFn verifying_accept(std::shared_ptr<Recorder> r) {
  return [r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) {
      const std::string header = string_of(m.header);
      const size_t colon = header.find(':');
      if (colon == std::string::npos) {
        r->add_note("bad header " + header);
        return;
      }
      const uint32_t seed = static_cast<uint32_t>(std::stoul(header.substr(0, colon)));
      const size_t size = std::stoull(header.substr(colon + 1));
      const size_t got = m.payload ? m.payload->size() : 0;
      if (got != size) {
        r->add_note(header + " size " + std::to_string(got));
        return;
      }
      std::vector<std::byte> data(size);
      if (m.payload) {
        Status st = m.payload->receive(data.data());
        if (!st.is_ok()) {
          r->add_note(header + " " + st.to_string());
          return;
        }
      }
      r->add_note(data == pattern(size, seed) ? header + " ok" : header + " corrupt");
    };
    h.on_closed = [r](Connection&, const Status& st) { r->add_closed(st); };
    return h;
  };
}

TEST_P(Conformance, ListenerReportsRealPort) {
  const std::string address = listen([](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(split_host_port(address, &host, &port)) << address;
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_NE(port, 0);
}

TEST_P(Conformance, HeaderOnlyMessagesEchoInOrder) {
  const std::string address = listen_echo();
  auto r = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(r));
  ASSERT_NE(conn, nullptr);
  EXPECT_FALSE(conn->peer().empty());
  const std::vector<size_t> sizes = {0, 1, 15, 16, 100, 1000, 1008, 1024, 1025, 4000, 8192, 100000, 1 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(conn->send(pattern(sizes[i], static_cast<uint32_t>(i))).is_ok());
  }
  ASSERT_TRUE(r->wait_messages(sizes.size()));
  auto got = r->take_messages();
  ASSERT_EQ(got.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(got[i].header, pattern(sizes[i], static_cast<uint32_t>(i))) << "message " << i;
    EXPECT_EQ(got[i].payload, nullptr) << "message " << i;
  }
}

TEST_P(Conformance, PayloadsFromOneByteTo64MiBArriveIntact) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen(verifying_accept(r));
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const std::vector<size_t> sizes = {1,     2,         100,           4095,     4096,    4097,
                                     8193,  65536,     (1 << 20) + 3, 16 << 20, 64 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string header = std::to_string(i + 7) + ":" + std::to_string(sizes[i]);
    auto data = pattern(sizes[i], static_cast<uint32_t>(i + 7));
    ASSERT_TRUE(conn->send(bytes_of(header), data).is_ok()) << header;
  }
  ASSERT_TRUE(r->wait_notes(sizes.size()));
  auto notes = r->notes();
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(notes[i], std::to_string(i + 7) + ":" + std::to_string(sizes[i]) + " ok");
  }
}

TEST_P(Conformance, HandlerReceivesAndSendsLargePayloadBack) {
  const std::string address = listen_echo();
  auto r = std::make_shared<Recorder>();
  ConnectionHandler h;
  // The client receives inside its own handler too.
  h.on_message = [r](Connection&, Message m) {
    std::vector<std::byte> data(m.payload ? m.payload->size() : 0);
    if (m.payload && !m.payload->receive(data.data()).is_ok()) data.clear();
    r->add_note(string_of(m.header) + ":" + (data == pattern(data.size(), 3) ? "ok" : "bad") + ":" +
                std::to_string(data.size()));
  };
  auto conn = connect(address, h);
  ASSERT_NE(conn, nullptr);
  const std::vector<size_t> sizes = {100, 4 << 20, 10, 300000};
  for (size_t s : sizes) ASSERT_TRUE(conn->send(bytes_of("echo"), pattern(s, 3)).is_ok());
  ASSERT_TRUE(r->wait_notes(sizes.size()));
  auto notes = r->notes();
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(notes[i], "echo:ok:" + std::to_string(sizes[i]));
}

TEST_P(Conformance, MixedEagerAndRendezvousKeepSendOrder) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen(verifying_accept(r));
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const size_t cycle[] = {0, 10, 5000, 70000, 300000, 3, 2 << 20};
  constexpr int kCount = 700;
  for (int i = 0; i < kCount; ++i) {
    const size_t size = cycle[i % 7];
    const std::string header = std::to_string(i) + ":" + std::to_string(size);
    ASSERT_TRUE(conn->send(bytes_of(header), pattern(size, static_cast<uint32_t>(i))).is_ok());
  }
  ASSERT_TRUE(r->wait_notes(kCount));
  auto notes = r->notes();
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(notes[i], std::to_string(i) + ":" + std::to_string(cycle[i % 7]) + " ok");
  }
}

TEST_P(Conformance, ManyThreadsEachKeepTheirOrder) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen_recording(r);
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 400;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Small payloads only: the recorder does not receive, and eager
      // payloads never hold the sender.
      for (int i = 0; i < kPerThread; ++i) {
        uint32_t h[2] = {static_cast<uint32_t>(t), static_cast<uint32_t>(i)};
        std::vector<std::byte> header(sizeof(h));
        std::memcpy(header.data(), h, sizeof(h));
        std::vector<std::byte> payload(i % 3 == 0 ? 64 : 0, std::byte(i));
        if (!conn->send(header, payload).is_ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(r->wait_messages(kThreads * kPerThread));
  auto got = r->take_messages();
  ASSERT_EQ(got.size(), static_cast<size_t>(kThreads * kPerThread));
  int next[kThreads] = {0};
  for (auto& m : got) {
    ASSERT_EQ(m.header.size(), 8u);
    uint32_t h[2];
    std::memcpy(h, m.header.data(), sizeof(h));
    ASSERT_LT(h[0], static_cast<uint32_t>(kThreads));
    ASSERT_EQ(h[1], static_cast<uint32_t>(next[h[0]])) << "thread " << h[0];
    ++next[h[0]];
    const size_t expect = h[1] % 3 == 0 ? 64 : 0;
    ASSERT_EQ(m.payload ? m.payload->size() : 0, expect);
    if (m.payload) {
      std::vector<std::byte> data(expect);
      ASSERT_TRUE(m.payload->receive(data.data()).is_ok());
      EXPECT_EQ(data, std::vector<std::byte>(expect, std::byte(h[1])));
    }
  }
}

TEST_P(Conformance, ManyThreadsWithRendezvousPayloads) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen(verifying_accept(r));
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  constexpr int kThreads = 3;
  constexpr int kPerThread = 60;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t size = (i % 4 == 0) ? 600000 : static_cast<size_t>(i * 37);
        const uint32_t seed = static_cast<uint32_t>(t * 1000 + i);
        const std::string header = std::to_string(seed) + ":" + std::to_string(size);
        if (!conn->send(bytes_of(header), pattern(size, seed)).is_ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(r->wait_notes(kThreads * kPerThread));
  int next[kThreads] = {0};
  for (const auto& note : r->notes()) {
    ASSERT_EQ(note.substr(note.size() - 3), " ok") << note;
    const int seed = std::stoi(note.substr(0, note.find(':')));
    const int t = seed / 1000;
    ASSERT_EQ(seed % 1000, next[t]) << note;
    ++next[t];
  }
}

TEST_P(Conformance, SixteenMiBHeaders) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen([r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) {
      if (m.payload) {
        std::vector<std::byte> data(m.payload->size());
        const bool ok = m.payload->receive(data.data()).is_ok() && data == pattern(data.size(), 99);
        r->add_note(ok ? "payload ok" : "payload bad");
      } else {
        r->add_note("no payload");
      }
      r->add_message(std::move(m));
    };
    return h;
  });
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const auto big = pattern(16 << 20, 5);
  const auto medium = pattern(3000, 6);
  ASSERT_TRUE(conn->send(big).is_ok());
  ASSERT_TRUE(conn->send(big, pattern(1 << 20, 99)).is_ok());
  ASSERT_TRUE(conn->send(medium, pattern(100000, 99)).is_ok());
  ASSERT_TRUE(conn->send(medium, pattern(10, 99)).is_ok());
  ASSERT_TRUE(r->wait_messages(4));
  auto got = r->take_messages();
  EXPECT_EQ(got[0].header, big);
  EXPECT_EQ(got[1].header, big);
  EXPECT_EQ(got[2].header, medium);
  EXPECT_EQ(got[3].header, medium);
  EXPECT_EQ(r->notes(), (std::vector<std::string>{"no payload", "payload ok", "payload ok", "payload ok"}));
}

TEST_P(Conformance, ReceiveFromAnotherThreadAfterHandlerReturned) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen_recording(r);
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const auto data = pattern(8 << 20, 11);
  // A rendezvous send completes only once the receiver pulled the data.
  std::thread sender([&] { EXPECT_TRUE(conn->send(bytes_of("big"), data).is_ok()); });
  ASSERT_TRUE(r->wait_messages(1));
  auto got = r->take_messages();
  ASSERT_NE(got[0].payload, nullptr);
  ASSERT_EQ(got[0].payload->size(), data.size());
  std::vector<std::byte> dst(data.size());
  ASSERT_TRUE(got[0].payload->receive(dst.data()).is_ok());
  EXPECT_EQ(dst, data);
  EXPECT_FALSE(got[0].payload->receive(dst.data()).is_ok()) << "second receive must fail";
  sender.join();
}

TEST_P(Conformance, LargePayloadsStayAtTheSenderUntilReceived) {
  // Rendezvous: the receiver's receive() pulls the data into its buffer, so
  // the sender's send() cannot return before that. (In process, send copies.)
  if (GetParam() == "inproc") GTEST_SKIP() << "the in-process transport copies at send()";
  auto r = std::make_shared<Recorder>();
  const std::string address = listen_recording(r);
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const auto data = pattern(1 << 20, 12);
  std::atomic<bool> returned{false};
  std::thread sender([&] {
    EXPECT_TRUE(conn->send(bytes_of("1 MiB"), data).is_ok());
    returned = true;
  });
  ASSERT_TRUE(r->wait_messages(1));
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(returned.load()) << "1 MiB went eagerly";
  auto got = r->take_messages();
  std::vector<std::byte> dst(data.size());
  ASSERT_TRUE(got[0].payload->receive(dst.data()).is_ok());
  sender.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(dst, data);
}

TEST_P(Conformance, DroppedPayloadReleasesTheSender) {
  auto r = std::make_shared<Recorder>();
  const std::string address = listen([r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [r](Connection&, Message m) {
      r->add_note(string_of(m.header));  // payload destroyed unreceived
    };
    return h;
  });
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  for (size_t size : {size_t{100}, size_t{8} << 20, size_t{5000}}) {
    ASSERT_TRUE(conn->send(bytes_of(std::to_string(size)), pattern(size, 1)).is_ok());
  }
  ASSERT_TRUE(r->wait_notes(3));
  EXPECT_EQ(r->notes(), (std::vector<std::string>{"100", "8388608", "5000"}));
}

// What a detached send's done() was called with, from any thread.
struct DoneLog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> calls;
  std::function<void(const Status&)> callback() {
    return [this](const Status& s) {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(s);
      cv.notify_all();
    };
  }
  bool wait(size_t n, std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, [&] { return calls.size() >= n; });
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return calls.size();
  }
};

TEST_P(Conformance, DetachedSendEndsWhenTheBytesAreTaken) {
  // send_detached returns at once; done() comes once, with success, when the
  // peer has the bytes (a rendezvous reads them from the sender's buffer).
  auto r = std::make_shared<Recorder>();
  const std::string address = listen_recording(r);
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  const auto data = pattern(8 << 20, 21);
  auto log = std::make_shared<DoneLog>();  // outlives the test body should it fail early
  conn->send_detached(bytes_of("8 MiB"), data, [log](const Status& s) { log->callback()(s); });
  ASSERT_TRUE(r->wait_messages(1));
  if (GetParam() != "inproc") {  // the in-process transport copies at once
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(log->count(), 0u) << "done() before the peer took the bytes";
  }
  auto got = r->take_messages();
  ASSERT_NE(got[0].payload, nullptr);
  std::vector<std::byte> dst(data.size());
  ASSERT_TRUE(got[0].payload->receive(dst.data()).is_ok());
  EXPECT_EQ(dst, data);
  ASSERT_TRUE(log->wait(1));
  std::this_thread::sleep_for(50ms);
  std::lock_guard<std::mutex> lock(log->mu);
  ASSERT_EQ(log->calls.size(), 1u);
  EXPECT_TRUE(log->calls[0].is_ok()) << log->calls[0].to_string();
}

TEST_P(Conformance, APeerThatClosesWithBytesUntakenEndsTheSends) {
  // Clients close while two 8 MiB payloads the server sent each of them are
  // still untaken: each of the server's sends ends (done() once) and the
  // server goes on serving. Its close must not wait for, or trip over, sends
  // the peer will never take (over UCX 1.13 a flushing close aborted in
  // about one round in eight, and the client's release of its untaken
  // payloads, made off the progress thread, in about one round in 700;
  // hence the rounds).
  auto r = std::make_shared<Recorder>();
  auto accepted = std::make_shared<std::vector<std::shared_ptr<Connection>>>();
  auto accepted_mu = std::make_shared<std::mutex>();
  const std::string address = listen([r, accepted, accepted_mu](std::shared_ptr<Connection> c) {
    std::lock_guard<std::mutex> lock(*accepted_mu);
    accepted->push_back(c);
    return recording_handler(r);
  });
  const auto data = pattern(8 << 20, 22);
  constexpr int kRounds = 64;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto client_side = std::make_shared<Recorder>();
    auto conn = connect(address, recording_handler(client_side));
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->send(bytes_of("hello"), {}).is_ok());  // the server has accepted once this arrives
    ASSERT_TRUE(r->wait_messages(1));
    r->take_messages();
    std::shared_ptr<Connection> server_side;
    {
      std::lock_guard<std::mutex> lock(*accepted_mu);
      ASSERT_EQ(accepted->size(), static_cast<size_t>(round + 1));
      server_side = accepted->back();
    }
    auto log = std::make_shared<DoneLog>();
    for (int i = 0; i < 2; ++i) {
      server_side->send_detached(bytes_of("untaken"), data, [log](const Status& s) { log->callback()(s); });
    }
    ASSERT_TRUE(client_side->wait_messages(2));
    conn->close();
    ASSERT_TRUE(log->wait(2)) << "sends to a peer that closed never ended";
    ASSERT_TRUE(r->wait_closed(static_cast<size_t>(round + 1)));
    client_side->take_messages();  // the untaken payloads go only now
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(log->count(), 2u);
  }
}

TEST_P(Conformance, ConnectWhereNobodyListensFails) {
  const std::string address = listen([](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  listener_.reset();
  const auto start = std::chrono::steady_clock::now();
  auto c = client().connect(address, {}, 5s);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().kind(), ErrorKind::kDisconnected) << c.status().to_string();
  EXPECT_LT(took, 6s);
}

TEST_P(Conformance, MalformedAddressIsRejected) {
  auto c = client().connect("no-port-here", {}, 1s);
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().kind(), ErrorKind::kInvalidArgument);
  auto l = server_->listen("127.0.0.1:notaport", [](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  EXPECT_FALSE(l.is_ok());
}

TEST_P(Conformance, ClientCloseIsReportedOnBothSides) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen_recording(server_side);
  auto client_side = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(client_side));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->send(bytes_of("last words")).is_ok());
  conn->close();
  conn->close();  // idempotent
  EXPECT_EQ(conn->send(bytes_of("after close")).kind(), ErrorKind::kDisconnected);
  ASSERT_TRUE(client_side->wait_closed(5s));
  ASSERT_TRUE(server_side->wait_closed(5s));
  EXPECT_TRUE(client_side->closed()[0].is_ok()) << client_side->closed()[0].to_string();
  EXPECT_EQ(server_side->closed()[0].kind(), ErrorKind::kDisconnected);
  // Delivered before the close notification.
  auto got = server_side->take_messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(string_of(got[0].header), "last words");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(client_side->closed().size(), 1u) << "on_closed must be called once";
  EXPECT_EQ(server_side->closed().size(), 1u) << "on_closed must be called once";
}

TEST_P(Conformance, ServerCloseIsReportedToClient) {
  auto accepted = std::make_shared<std::vector<std::shared_ptr<Connection>>>();
  auto mu = std::make_shared<std::mutex>();
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen([=](std::shared_ptr<Connection> c) {
    std::lock_guard<std::mutex> lock(*mu);
    accepted->push_back(std::move(c));
    server_side->add_note("accepted");
    return recording_handler(server_side);
  });
  auto client_side = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(client_side));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(server_side->wait_notes(1));
  {
    std::lock_guard<std::mutex> lock(*mu);
    ASSERT_EQ(accepted->size(), 1u);
    EXPECT_FALSE((*accepted)[0]->peer().empty());
    (*accepted)[0]->close();
  }
  ASSERT_TRUE(client_side->wait_closed(5s));
  EXPECT_EQ(client_side->closed()[0].kind(), ErrorKind::kDisconnected);
  EXPECT_EQ(conn->send(bytes_of("too late")).kind(), ErrorKind::kDisconnected);
  ASSERT_TRUE(server_side->wait_closed(5s));
  EXPECT_TRUE(server_side->closed()[0].is_ok());
}

TEST_P(Conformance, ClosingReleasesASenderBlockedOnAnUnreceivedPayload) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen_recording(server_side);  // never receives
  auto conn = connect(address, {});
  ASSERT_NE(conn, nullptr);
  std::atomic<bool> returned{false};
  std::thread sender([&] {
    (void)conn->send(bytes_of("held"), pattern(8 << 20, 2));  // over UCX: blocks until released
    returned = true;
  });
  ASSERT_TRUE(server_side->wait_messages(1));
  conn->close();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!returned && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(returned.load()) << "send() still blocked after close()";
  if (!returned) {
    server_.reset();  // release it before joining
    client_.reset();
  }
  sender.join();
  // The held payload's sender is gone: receiving it fails or succeeds, but returns.
  auto got = server_side->take_messages();
  ASSERT_EQ(got.size(), 1u);
  std::vector<std::byte> dst(got[0].payload ? got[0].payload->size() : 0);
  if (got[0].payload) (void)got[0].payload->receive(dst.data());
}

// CPU seconds this process has used.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

TEST_P(Conformance, HandlerBlockedInSendDoesNotSpin) {
  // The server's handler answers with a large payload and, over UCX, blocks
  // until the client receives it, with more messages queued behind it. The
  // client waits a second first; the waiting must cost little CPU.
  const std::string address = listen([](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [](Connection& c, Message m) {
      if (string_of(m.header) == "answer big") {
        EXPECT_TRUE(c.send(bytes_of("big"), pattern(8 << 20, 6)).is_ok());
      }
    };
    return h;
  });
  auto r = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(r));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->send(bytes_of("answer big")).is_ok());
  ASSERT_TRUE(conn->send(bytes_of("queued behind")).is_ok());
  ASSERT_TRUE(r->wait_messages(1));
  const double cpu_before = cpu_seconds();
  std::this_thread::sleep_for(1s);
  const double used = cpu_seconds() - cpu_before;
  EXPECT_LT(used, 0.15) << "CPU seconds used while idle-waiting: " << used;
  auto got = r->take_messages();
  ASSERT_NE(got[0].payload, nullptr);
  std::vector<std::byte> dst(got[0].payload->size());
  ASSERT_TRUE(got[0].payload->receive(dst.data()).is_ok());
  EXPECT_EQ(dst, pattern(8 << 20, 6));
}

TEST_P(Conformance, HandlersMayCloseTheirConnection) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen([server_side](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [](Connection& c, Message) { c.close(); };
    h.on_closed = [server_side](Connection&, const Status& st) { server_side->add_closed(st); };
    return h;
  });
  auto client_side = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(client_side));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->send(bytes_of("please hang up")).is_ok());
  ASSERT_TRUE(server_side->wait_closed(5s));
  ASSERT_TRUE(client_side->wait_closed(5s));
}

TEST_P(Conformance, DestroyingTransportWithLiveConnections) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen_recording(server_side);
  std::vector<std::shared_ptr<Recorder>> clients;
  std::vector<std::shared_ptr<Connection>> conns;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_shared<Recorder>());
    conns.push_back(connect(address, recording_handler(clients.back())));
    ASSERT_NE(conns.back(), nullptr);
    ASSERT_TRUE(conns.back()->send(bytes_of("hello")).is_ok());
  }
  ASSERT_TRUE(server_side->wait_messages(3));
  listener_.reset();
  server_.reset();  // for inproc this is also the client transport
  for (auto& c : clients) ASSERT_TRUE(c->wait_closed(5s));
  for (auto& c : conns) EXPECT_EQ(c->send(bytes_of("orphan")).kind(), ErrorKind::kDisconnected);
  client_.reset();  // connections still referenced here must not mind
  for (auto& c : conns) {
    EXPECT_EQ(c->send(bytes_of("orphan")).kind(), ErrorKind::kDisconnected);
    c->close();
  }
}

TEST_P(Conformance, ListenerMayOutliveItsTransport) {
  const std::string address = listen([](std::shared_ptr<Connection>) { return ConnectionHandler{}; });
  client_.reset();
  server_.reset();
  const auto start = std::chrono::steady_clock::now();
  listener_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// A caller polling for its reply gets it: on UCX the reply's handler runs on
// the polling thread (no handoff); the in-process transport only checks.
TEST_P(Conformance, PollUntilDeliversRepliesToThePollingThread) {
  const std::string address = listen_echo();
  std::mutex mu;
  std::vector<std::thread::id> handler_threads;
  ConnectionHandler h;
  h.on_message = [&](Connection&, Message) {
    std::lock_guard<std::mutex> lock(mu);
    handler_threads.push_back(std::this_thread::get_id());
  };
  auto conn = connect(address, std::move(h));
  ASSERT_NE(conn, nullptr);
  auto got = [&](size_t n) {
    return [&, n] {
      std::lock_guard<std::mutex> lock(mu);
      return handler_threads.size() >= n;
    };
  };
  const bool polls = GetParam() != "inproc";
  for (size_t i = 1; i <= 50; ++i) {
    ASSERT_TRUE(conn->send(pattern(64, static_cast<uint32_t>(i)), pattern(i % 2 ? 0 : 100000, 7)).is_ok());
    const bool done = conn->poll_until(got(i), 5s);
    if (polls) {
      ASSERT_TRUE(done) << "reply " << i << " not delivered while polling";
    } else {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!got(i)() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    }
  }
  {
    // Released before polling again: a handler run by the poll takes it.
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(handler_threads.size(), 50u);
    if (polls) {
      // Most replies arrive while this thread polls; the transport's own
      // thread may win a few races.
      const auto mine = std::count(handler_threads.begin(), handler_threads.end(), std::this_thread::get_id());
      EXPECT_GE(mine, 25) << "replies were not handed to the polling thread";
    }
  }
  // A budget that runs out returns false, after roughly the budget.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(conn->poll_until([] { return false; }, 2ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

// Payloads sent from and received into registered memory arrive intact;
// registrations are checked for overlap and dropped again.
TEST_P(Conformance, RegisteredBuffersCarryPayloads) {
  constexpr size_t kMax = 8u << 20;
  auto server_buffer = std::make_shared<std::vector<std::byte>>(kMax);
  auto r = std::make_shared<Recorder>();
  const std::string address = listen([r, server_buffer](std::shared_ptr<Connection> c) {
    EXPECT_TRUE(c->register_memory(server_buffer->data(), server_buffer->size()).is_ok());
    ConnectionHandler h;
    h.on_message = [r, server_buffer](Connection& conn, Message m) {
      const size_t n = m.payload ? m.payload->size() : 0;
      if (n > server_buffer->size() || (m.payload && !m.payload->receive(server_buffer->data()).is_ok())) {
        r->add_note("receive failed");
        return;
      }
      (void)conn.send(m.header, Bytes(server_buffer->data(), n));
    };
    return h;
  });
  std::vector<std::byte> client_buffer(kMax);
  auto replies = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(replies));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->register_memory(client_buffer.data(), client_buffer.size()).is_ok());
  if (GetParam() != "inproc") {
    EXPECT_FALSE(conn->register_memory(client_buffer.data() + 4096, 4096).is_ok()) << "overlap accepted";
  }
  const std::vector<size_t> sizes = {1, 4096, 100000, 1u << 20, kMax};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto data = pattern(sizes[i], static_cast<uint32_t>(i + 1));
    std::memcpy(client_buffer.data(), data.data(), data.size());
    ASSERT_TRUE(conn->send(pattern(16, static_cast<uint32_t>(i)), Bytes(client_buffer.data(), sizes[i])).is_ok());
    ASSERT_TRUE(replies->wait_messages(1));
    auto got = replies->take_messages();
    ASSERT_EQ(got.size(), 1u);
    ASSERT_NE(got[0].payload, nullptr);
    std::vector<std::byte> back(sizes[i]);
    ASSERT_TRUE(got[0].payload->receive(back.data()).is_ok());
    EXPECT_EQ(back, data) << "size " << sizes[i];
  }
  EXPECT_TRUE(r->notes().empty());
  conn->unregister_memory(client_buffer.data());
  // Unregistered memory can be registered again.
  EXPECT_TRUE(conn->register_memory(client_buffer.data() + 4096, 4096).is_ok());
  conn->unregister_memory(client_buffer.data() + 4096);
}

// A large header sent alone does not wait for the peer to take it: send()
// returns while the peer's handler is still busy, and order is kept.
TEST_P(Conformance, LargeHeaderAloneDoesNotWaitForThePeer) {
  std::atomic<bool> first_handled{false};
  auto r = std::make_shared<Recorder>();
  const std::string address = listen([&, r](std::shared_ptr<Connection>) {
    ConnectionHandler h;
    h.on_message = [&, r](Connection&, Message m) {
      if (string_of(m.header) == "hold") {
        std::this_thread::sleep_for(500ms);  // the peer is busy
        first_handled = true;
      }
      r->add_message(std::move(m));
    };
    return h;
  });
  auto conn = connect(address, ConnectionHandler{});
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->send(bytes_of("hold")).is_ok());
  const auto big = pattern(4u << 20, 9);
  ASSERT_TRUE(conn->send(big).is_ok());
  EXPECT_FALSE(first_handled.load()) << "send() waited for the busy peer";
  ASSERT_TRUE(r->wait_messages(2));
  auto got = r->take_messages();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(string_of(got[0].header), "hold");
  EXPECT_EQ(got[1].header, big);
}

// Limits a server puts on a peer that has not authenticated yet.
ReceiveLimits strict_limits() {
  ReceiveLimits l;
  l.max_header = 64 << 10;
  l.max_parked_frames = 8;
  l.max_parked_bytes = 256 << 10;
  return l;
}

// A header over the receiver's max_header closes the connection, saying so;
// one of exactly max_header bytes passes.
TEST_P(Conformance, HeaderOverTheLimitClosesTheConnection) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen([server_side](std::shared_ptr<Connection> c) {
    c->set_receive_limits(strict_limits());
    server_side->add_note("accepted");
    return recording_handler(server_side);
  });
  auto client_side = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(client_side));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(server_side->wait_notes(1));  // the limits are in force
  ASSERT_TRUE(conn->send(pattern(65536, 1)).is_ok());
  ASSERT_TRUE(server_side->wait_messages(1));
  (void)conn->send(pattern(70000, 2));  // may already see the close
  ASSERT_TRUE(server_side->wait_closed(5s));
  const Status why = server_side->closed()[0];
  EXPECT_EQ(why.kind(), ErrorKind::kFailed) << why.to_string();
  EXPECT_NE(why.message().find("max_header (70000 > 65536)"), std::string::npos) << why.to_string();
  ASSERT_TRUE(client_side->wait_closed(5s));
  EXPECT_EQ(client_side->closed()[0].kind(), ErrorKind::kDisconnected) << client_side->closed()[0].to_string();
  auto got = server_side->take_messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].header, pattern(65536, 1));
}

// A server relaxes the limits once the peer has said who it is; larger
// headers then pass, on the same connection.
TEST_P(Conformance, RaisedLimitsLetLargerHeadersThrough) {
  auto server_side = std::make_shared<Recorder>();
  const std::string address = listen([server_side](std::shared_ptr<Connection> c) {
    c->set_receive_limits(strict_limits());
    ConnectionHandler h = recording_handler(server_side);
    h.on_message = [server_side](Connection& conn, Message m) {
      if (string_of(m.header) == "trust me") {
        conn.set_receive_limits(ReceiveLimits{});
        EXPECT_TRUE(conn.send(bytes_of("trusted")).is_ok());
      }
      server_side->add_message(std::move(m));
    };
    return h;
  });
  auto client_side = std::make_shared<Recorder>();
  auto conn = connect(address, recording_handler(client_side));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->send(bytes_of("trust me")).is_ok());
  ASSERT_TRUE(client_side->wait_messages(1));
  const auto big = pattern(4 << 20, 3);
  ASSERT_TRUE(conn->send(big).is_ok());
  // A payload small enough to go eagerly: the recorder does not receive it.
  ASSERT_TRUE(conn->send(pattern(100000, 4), pattern(1000, 5)).is_ok());
  ASSERT_TRUE(server_side->wait_messages(3));
  auto got = server_side->take_messages();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].header, big);
  EXPECT_EQ(got[2].header, pattern(100000, 4));
  ASSERT_NE(got[2].payload, nullptr);
  std::vector<std::byte> data(got[2].payload->size());
  ASSERT_TRUE(got[2].payload->receive(data.data()).is_ok());
  EXPECT_EQ(data, pattern(1000, 5));
  EXPECT_TRUE(server_side->closed().empty()) << server_side->closed()[0].to_string();
  EXPECT_TRUE(client_side->closed().empty()) << client_side->closed()[0].to_string();
}

INSTANTIATE_TEST_SUITE_P(Inproc, Conformance, ::testing::Values("inproc"));
INSTANTIATE_TEST_SUITE_P(Ucx, Conformance, ::testing::Values("ucx", "ucx_rndv"));

}  // namespace
}  // namespace rgpu::transport::testing
