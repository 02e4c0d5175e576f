// rgpu-pool's service against bad peers: oversized and malformed frames,
// fields out of range, messages in the wrong role. Each is answered with an
// error and the connection closed; the service goes on serving others.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "rgpu/pool/agent.h"
#include "rgpu/pool/client.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/service.h"
#include "rgpu/pool/wire.h"
#include "rgpu/protocol/auth.h"

namespace rgpu::pool {
namespace {

using namespace std::chrono_literals;
using poolwire::PoolMessage;

Millis wall_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A registration of server `id` (`devices` CPU devices of 1 GiB) at
// `address`, signed with `key` at `time` (nothing signed for an empty key).
void registration(capnp::MallocMessageBuilder& b, const std::string& id, const std::string& address,
                  const std::string& key, Millis time, uint64_t boot = 1, uint32_t devices = 1) {
  ServerInfo info;
  info.id = id;
  info.address = address;
  for (uint32_t d = 0; d < devices; ++d) info.devices.push_back(Device{d, "cpu", 0, 1ull << 30, {}});
  auto r = b.initRoot<PoolMessage>().initRegister();
  wire::write(r, info);
  r.setBootId(boot);
  if (!key.empty()) wire::sign(r, key, time);
}

// Registers server s1 with `devices` CPU devices under the service's key
// ("k") over `ch`; whether the service answered that it is registered.
bool registers(net::Channel& ch, uint32_t devices) {
  capnp::MallocMessageBuilder b;
  registration(b, "s1", "127.0.0.1:1", "k", wall_now(), 1, devices);
  if (!ch.send(b).is_ok()) return false;
  auto m = ch.receive(2s);
  return m.is_ok() && m.value() && m.value()->root().which() == PoolMessage::REGISTERED;
}

// A service run on its own thread, with server s1 (one CPU device of
// 1 GiB) registered under the service's key; stopped when destroyed.
struct RunningService {
  std::unique_ptr<service::Service> svc;
  std::thread loop;
  std::unique_ptr<net::Channel> server;  // s1's registration
  ~RunningService() {
    if (!loop.joinable()) return;
    svc->stop();
    loop.join();
  }
};

void start_with_server(const service::ServiceOptions& options, RunningService* out) {
  auto opened = service::Service::open(options);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  out->svc = std::move(opened.value());
  out->loop = std::thread([svc = out->svc.get()] { (void)svc->run(); });
  auto server = net::Channel::connect({out->svc->address()}, 2s);
  ASSERT_TRUE(server.is_ok());
  out->server = std::move(server.value());
  capnp::MallocMessageBuilder b;
  registration(b, "s1", "127.0.0.1:1", options.key, wall_now());
  ASSERT_TRUE(out->server->send(b).is_ok());
  auto m = out->server->receive(2s);
  ASSERT_TRUE(m.is_ok() && m.value());
  ASSERT_EQ(m.value()->root().which(), PoolMessage::REGISTERED);
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service::ServiceOptions o;
    o.key = "k";
    o.max_frame = 4096;
    auto s = service::Service::open(o);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    service_ = std::move(s.value());
    thread_ = std::thread([this] { (void)service_->run(); });
  }
  void TearDown() override {
    service_->stop();
    thread_.join();
  }

  std::unique_ptr<net::Channel> connect() {
    auto ch = net::Channel::connect({service_->address()}, 2s);
    EXPECT_TRUE(ch.is_ok());
    return ch.is_ok() ? std::move(ch.value()) : nullptr;
  }

  // The error the service answers with, then that it closed the connection.
  std::string refusal(net::Channel& ch) {
    std::string text;
    for (int i = 0; i < 50; ++i) {
      auto m = ch.receive(100ms);
      if (!m.is_ok()) return text.empty() ? "closed without an error" : text;  // closed: done
      if (m.value() && m.value()->root().which() == PoolMessage::ERROR) {
        text = m.value()->root().getError().getMessage().cStr();
      }
    }
    return "still open: " + text;
  }

  bool still_serves() {
    auto s = client::query_status({service_->address()}, 2s);
    return s.is_ok();
  }

  std::unique_ptr<service::Service> service_;
  std::thread thread_;
};

TEST_F(ServiceTest, OversizedFrameIsRefusedUnread) {
  auto ch = connect();
  const uint8_t header[4] = {0xff, 0xff, 0xff, 0x7f};
  ASSERT_EQ(send(ch->fd(), header, 4, MSG_NOSIGNAL), 4);
  EXPECT_NE(refusal(*ch).find("over the limit"), std::string::npos);
  EXPECT_TRUE(still_serves());
}

TEST_F(ServiceTest, GarbageIsRefused) {
  auto ch = connect();
  uint8_t frame[4 + 64] = {64, 0, 0, 0};
  for (int i = 4; i < 68; ++i) frame[i] = static_cast<uint8_t>(i * 37);
  ASSERT_EQ(send(ch->fd(), frame, sizeof frame, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof frame));
  EXPECT_NE(refusal(*ch).find("malformed"), std::string::npos);
  EXPECT_TRUE(still_serves());
}

TEST_F(ServiceTest, BadFieldsAreRefusedByName) {
  {
    auto ch = connect();
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initSubmit();
    r.setDevices(1);
    r.setKind("tpu");
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch).find("device kind 'tpu'"), std::string::npos);
  }
  {
    auto ch = connect();
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initSubmit();
    r.setDevices(100000);
    r.setKind("cpu");
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch), "still open: ");
  }
  {
    auto ch = connect();
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initSubmit();
    r.setDevices(1);
    r.setShareUnits(20000);
    r.setKind("cpu");
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch).find("over one device"), std::string::npos);
  }
  {
    auto ch = connect();
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initRegister();
    r.setId("bad\x01id");
    r.setAddress("127.0.0.1:1");
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch).find("control character"), std::string::npos);
  }
  {
    auto ch = connect();  // a reply kind sent to the pool
    capnp::MallocMessageBuilder b;
    b.initRoot<PoolMessage>().initGranted().setLeaseId(1);
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch).find("not for the pool"), std::string::npos);
  }
  {
    auto ch = connect();  // a client may not report the end of sessions
    capnp::MallocMessageBuilder b;
    b.initRoot<PoolMessage>().setSessionEnded(7);
    ASSERT_TRUE(ch->send(b).is_ok());
    EXPECT_NE(refusal(*ch).find("only a server"), std::string::npos);
  }
  EXPECT_TRUE(still_serves());
}

TEST_F(ServiceTest, PlacesQueuesAndReleasesOnClose) {
  // A server with one CPU device, registered over the wire.
  auto server = connect();
  ASSERT_TRUE(registers(*server, 1));
  client::AcquireOptions o;
  o.pool = {service_->address()};
  o.request.kind = KindWanted::kCpu;
  auto first = client::acquire(o);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first.value().placement.at(0).server_id, "s1");
  EXPECT_NE(first.value().token.find("rgpu-lease-v1"), std::string::npos);
  // The device's one whole slice is held: the next waits, and is placed
  // when the holder's connection closes.
  Result<client::Held> second = failed("not yet");
  std::atomic<int> queued{0};
  std::string why;
  o.on_queued = [&](const client::QueueNotice& n) {
    if (queued++ == 0) why = n.why;
  };
  std::thread t([&] { second = client::acquire(o); });
  std::this_thread::sleep_for(300ms);
  first.value().channel.reset();
  t.join();
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_GE(queued.load(), 1);
  // The client hears why it waits: what it asked, what is free, where it stands.
  EXPECT_EQ(why, "1 device of kind cpu, a whole slice asked, 0 free of 1; position 1");
}

// A request no registered server could ever give is refused at once, with
// what was asked and what the pool has (not left waiting in the queue).
TEST_F(ServiceTest, ARequestNoServerCouldEverGiveIsRefusedAtOnce) {
  auto server = connect();
  ASSERT_TRUE(registers(*server, 2));
  struct Case {
    Request request;
    std::string asked;
  };
  Request nvidia;  // the default kind
  Request three;
  three.kind = KindWanted::kCpu;
  three.devices = 3;
  Request big;
  big.kind = KindWanted::kAny;
  big.memory_bytes = 2ull << 30;
  for (const Case& c : {Case{nvidia, "1 device of kind nvidia, a whole slice asked"},
                        Case{three, "3 devices of kind cpu, whole slices asked"},
                        Case{big, "1 device of kind any, 2.0 GiB asked"}}) {
    client::AcquireOptions o;
    o.pool = {service_->address()};
    o.request = c.request;
    o.request.timeout_ms = 60'000;
    bool queued = false;
    o.on_queued = [&](const client::QueueNotice&) { queued = true; };
    const auto start = std::chrono::steady_clock::now();
    auto held = client::acquire(o);
    ASSERT_FALSE(held.is_ok()) << c.asked;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << c.asked;
    EXPECT_FALSE(queued) << c.asked;
    const std::string m = held.status().message();
    EXPECT_NE(m.find("no registered server could ever give this request: " + c.asked), std::string::npos) << m;
    EXPECT_NE(m.find("the pool has 2 devices on 1 server: 2 cpu (1.0 GiB)"), std::string::npos) << m;
  }
  // Only the default kind's refusal suggests the CPU device.
  client::AcquireOptions o;
  o.pool = {service_->address()};
  auto held = client::acquire(o);
  ASSERT_FALSE(held.is_ok());
  EXPECT_NE(held.status().message().find("ask for kind cpu or any"), std::string::npos);
  // What it could ever have is still given.
  o.request.kind = KindWanted::kCpu;
  o.request.devices = 2;
  auto two = client::acquire(o);
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
}

// Only a holder of the pool's key registers a server: an impostor with the
// real server's id (no proof, the wrong key, a stale or replayed proof) is
// refused, and the real server keeps its address and its lease.
TEST_F(ServiceTest, AnImpostorCannotRegisterARealServersId) {
  auto real = connect();
  capnp::MallocMessageBuilder first;
  const Millis t0 = wall_now();
  registration(first, "s1", "127.0.0.1:1", "k", t0);
  ASSERT_TRUE(real->send(first).is_ok());
  auto m = real->receive(2s);
  ASSERT_TRUE(m.is_ok() && m.value());
  ASSERT_EQ(m.value()->root().which(), PoolMessage::REGISTERED);
  client::AcquireOptions o;
  o.pool = {service_->address()};
  o.request.kind = KindWanted::kCpu;
  auto held = client::acquire(o);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();

  struct Attempt {
    std::string key;
    Millis time;
    std::string expect;
  };
  for (const Attempt& a : {Attempt{"", t0 + 1, "no proof"}, Attempt{"not-the-key", t0 + 1, "does not match"},
                           Attempt{"k", t0 - 120'000, "from the pool's clock"}, Attempt{"k", t0, "replayed"}}) {
    auto impostor = connect();
    capnp::MallocMessageBuilder b;
    registration(b, "s1", "127.0.0.1:666", a.key, a.time);
    ASSERT_TRUE(impostor->send(b).is_ok());
    EXPECT_NE(refusal(*impostor).find(a.expect), std::string::npos) << a.expect;
  }
  // The real server is still the one placed at its own address, its lease held.
  auto s = client::query_status({service_->address()}, 2s);
  ASSERT_TRUE(s.is_ok());
  auto servers = s.value().root().getStatus().getServers();
  ASSERT_EQ(servers.size(), 1u);
  EXPECT_EQ(std::string(servers[0].getAddress().cStr()), "127.0.0.1:1");
  EXPECT_EQ(s.value().root().getStatus().getLeases().size(), 1u);
  EXPECT_FALSE(client::ended(held.value()).has_value());
}

// A pool with tenant keys grants only requests that prove their tenant's
// key: unsigned, wrongly signed, unknown-tenant, stale and replayed
// requests are refused with the reason, and the right key is granted.
TEST(TenantServiceTest, ClientsProveTheirTenantsKey) {
  service::ServiceOptions so;
  so.key = "k";
  auto tenants = protocol::auth::KeyRing::parse("alice alice-secret-123\nbob bob-secret-456\n", "test");
  ASSERT_TRUE(tenants.is_ok());
  so.tenants = tenants.value();
  RunningService running;
  ASSERT_NO_FATAL_FAILURE(start_with_server(so, &running));
  service::Service& svc = *running.svc;
  auto ask = [&](const std::string& tenant, const std::string& secret) {
    client::AcquireOptions o;
    o.pool = {svc.address()};
    o.request.kind = KindWanted::kCpu;
    o.request.tenant = tenant;
    o.request.timeout_ms = 2000;
    o.secret = secret;
    return client::acquire(o);
  };
  struct Case {
    std::string tenant, secret, expect;
  };
  for (const Case& c : {Case{"alice", "", "no proof"}, Case{"alice", "bob-secret-456", "does not match"},
                        Case{"carol", "alice-secret-123", "unknown tenant"}}) {
    auto held = ask(c.tenant, c.secret);
    ASSERT_FALSE(held.is_ok()) << c.tenant << " with '" << c.secret << "' was granted";
    EXPECT_NE(held.status().message().find(c.expect), std::string::npos) << held.status().to_string();
  }
  // A proof of another time, and one sent twice.
  Request r;
  r.kind = KindWanted::kCpu;
  r.tenant = "alice";
  auto submit = [&](capnp::MallocMessageBuilder& b, Millis time) {
    auto w = b.initRoot<PoolMessage>().initSubmit();
    wire::write(w, r);
    w.setProgram("p");
    w.setHostname("h");
    ASSERT_TRUE(wire::sign(w, r, "alice-secret-123", time).is_ok());
  };
  auto refused = [&](capnp::MallocMessageBuilder& b) {
    auto ch = net::Channel::connect({svc.address()}, 2s);
    EXPECT_TRUE(ch.is_ok() && ch.value()->send(b).is_ok());
    for (int i = 0; ch.is_ok() && i < 20; ++i) {
      auto m = ch.value()->receive(100ms);
      if (!m.is_ok()) break;
      if (m.value() && m.value()->root().which() == PoolMessage::ERROR) {
        return std::string(m.value()->root().getError().getMessage().cStr());
      }
      if (m.value() && m.value()->root().which() == PoolMessage::GRANTED) return std::string("granted");
    }
    return std::string("no answer");
  };
  capnp::MallocMessageBuilder stale;
  submit(stale, wall_now() - 120'000);
  EXPECT_NE(refused(stale).find("from the pool's clock"), std::string::npos);
  capnp::MallocMessageBuilder once;
  submit(once, wall_now());
  EXPECT_EQ(refused(once), "granted");
  EXPECT_NE(refused(once).find("replayed"), std::string::npos);
  // The right key is granted through the client.
  auto held = ask("bob", "bob-secret-456");
  EXPECT_TRUE(held.is_ok()) << held.status().to_string();
}

// A stand-in for the pool on the other end of an agent's connection: it
// accepts one connection, answers the registration and sends what the test
// gives it, as an on-path forger could.
class FakePool {
 public:
  FakePool() {
    auto fd = net::listen_on("127.0.0.1:0", &address_);
    EXPECT_TRUE(fd.is_ok());
    listen_fd_ = fd.is_ok() ? fd.value() : -1;
  }
  ~FakePool() {
    if (conn_ >= 0) close(conn_);
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  const std::string& address() const { return address_; }
  // Waits (bounded) for the agent's registration and answers it.
  bool accept_registration() {
    for (int i = 0; i < 200 && conn_ < 0; ++i) {
      conn_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn_ < 0) std::this_thread::sleep_for(10ms);
    }
    if (conn_ < 0) return false;
    int flags = fcntl(conn_, F_GETFL);
    fcntl(conn_, F_SETFL, flags & ~O_NONBLOCK);
    timeval tv{5, 0};
    setsockopt(conn_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    net::FrameReader reader;
    for (;;) {
      auto m = reader.next();
      if (!m.is_ok()) return false;
      if (m.value()) {
        if (m.value()->root().which() != PoolMessage::REGISTER) return false;
        break;
      }
      std::byte buf[4096];
      const ssize_t n = recv(conn_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      reader.append(buf, static_cast<size_t>(n));
    }
    capnp::MallocMessageBuilder b;
    b.initRoot<PoolMessage>().initRegistered().setHeartbeatIntervalMs(1000);
    return send(b);
  }
  bool send(capnp::MallocMessageBuilder& b) {
    const auto bytes = net::frame(b);
    return ::send(conn_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

 private:
  std::string address_;
  int listen_fd_ = -1;
  int conn_ = -1;
};

// rgpud's agent ends a lease's sessions only on the pool's own order:
// unsigned, wrongly signed, stale orders and orders for another server are
// ignored (and logged); the pool's order is obeyed. The orders are handled
// in turn, so once the good one has been, every forged one before it was.
TEST(AgentTest, OnlyThePoolsSignedOrdersEndSessions) {
  FakePool pool;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<LeaseId> ended;
  AgentOptions options;
  options.pool = {pool.address()};
  options.server.id = "s1";
  options.server.address = "127.0.0.1:1";
  options.server.devices.push_back(Device{0, "cpu", 0, 1ull << 30, {}});
  options.key = "k";
  AgentHooks hooks;
  hooks.sample = [] { return std::make_pair(std::vector<DeviceUse>{}, uint32_t{0}); };
  hooks.end_lease = [&](LeaseId lease, const std::string&) {
    std::lock_guard<std::mutex> lock(mu);
    ended.push_back(lease);
    cv.notify_all();
  };
  auto agent = Agent::start(options, hooks);
  ASSERT_TRUE(pool.accept_registration());
  struct Order {
    LeaseId lease;
    std::string key, server;
    Millis time;
  };
  const Millis now = wall_now();
  for (const Order& o : {Order{1, "", "s1", now}, Order{2, "not-the-key", "s1", now}, Order{3, "k", "s2", now},
                         Order{4, "k", "s1", now - 120'000}, Order{5, "k", "s1", now}}) {
    capnp::MallocMessageBuilder b;
    auto end = b.initRoot<PoolMessage>().initEndSession();
    end.setLeaseId(o.lease);
    end.setReason("preempted");
    if (!o.key.empty()) wire::sign(end, o.key, o.server, o.time);
    ASSERT_TRUE(pool.send(b));
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return !ended.empty(); }));
  EXPECT_EQ(ended, std::vector<LeaseId>{5});
}

// A service keeping its history in memory answers the history query with
// the lines of what it did, and refuses a window below zero.
TEST(ServiceHistoryTest, AnswersWithTheLinesOfItsGrants) {
  service::ServiceOptions so;
  so.key = "k";
  so.history = HistoryOptions{};  // no path: memory only
  RunningService running;
  ASSERT_NO_FATAL_FAILURE(start_with_server(so, &running));
  service::Service& svc = *running.svc;
  client::AcquireOptions o;
  o.pool = {svc.address()};
  o.request.kind = KindWanted::kCpu;
  o.request.tenant = "team-x";
  auto held = client::acquire(o);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  auto reply = client::query_history({svc.address()}, 3'600'000, 2s);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  auto h = reply.value().root().getHistory();
  EXPECT_TRUE(h.getKept());
  EXPECT_FALSE(h.getTruncated());
  std::string text;
  for (auto line : h.getLines()) text += std::string(line.cStr()) + "\n";
  EXPECT_NE(text.find("\"server\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"team-x\""), std::string::npos) << text;
  {
    auto ch = net::Channel::connect({svc.address()}, 2s);
    ASSERT_TRUE(ch.is_ok());
    capnp::MallocMessageBuilder b;
    b.initRoot<PoolMessage>().initHistoryQuery().setSinceMs(-1);
    ASSERT_TRUE(ch.value()->send(b).is_ok());
    bool refused = false;
    for (int i = 0; i < 20 && !refused; ++i) {
      auto m = ch.value()->receive(100ms);
      if (!m.is_ok()) break;
      refused = m.value() && m.value()->root().which() == PoolMessage::ERROR;
    }
    EXPECT_TRUE(refused);
  }
}

}  // namespace
}  // namespace rgpu::pool
