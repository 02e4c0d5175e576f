// The server and the client session over the in-process transport, on the
// CPU device: handshake, refusals, calls, deferred errors and cleanup.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <thread>

#include "client.h"
#include "connection.h"
#include "driver_pack.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/server/server.h"
#include "module_cache.h"
#include "staging_pool.h"
#include "rgpu/fatbin/fatbin.h"
#include "rgpu/transport/transport.h"

namespace rgpu {
namespace {

using shim::Client;
using shim::ClientOptions;
namespace auth = protocol::auth;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RGPU_CPU_DEVICE_MEMORY", "1G", 1);
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    transport_ = transport::make_inproc_transport();
    server::ServerOptions options;
    options.listen = "server:1";
    auto keys = protocol::auth::KeyRing::single(token_);
    ASSERT_TRUE(keys.is_ok());
    options.keys = std::move(keys.value());
    auto server = server::Server::start(driver.value(), transport_, options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server.value());
  }

  // Another server on the same transport, with the default tenant's key
  // and the rest of `options`.
  Result<std::unique_ptr<server::Server>> start_server(server::ServerOptions options) {
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    if (!driver.is_ok()) return driver.status();
    options.keys = protocol::auth::KeyRing::single(token_).value();
    return server::Server::start(driver.value(), transport_, options);
  }

  Result<std::unique_ptr<Client>> connect(const std::string& token) {
    ClientOptions o;
    o.server = server_->address();
    o.auth_token = token;
    o.connect_timeout = std::chrono::milliseconds(5000);
    return Client::connect(o, transport_);
  }

  // Retains a context for `c` and returns its handle.
  uint64_t context(Client& c) {
    c.call_async(0, [](wire::Call::Builder call) {
      auto p = call.initPrimaryCtxRetain();
      p.setHandle(protocol::primary_context(0));
      p.setDevice(0);
    });
    return protocol::primary_context(0);
  }

  // cuMemGetInfo as the client library sends it: a generated call.
  static shim::SyncResult mem_get_info(Client& c, uint64_t ctx, size_t* free_bytes) {
    namespace calls = apigen::driver;
    size_t total = 0;
    protocol::ArgWriter args;
    calls::pack_cuMemGetInfo_v2(args, free_bytes, &total);
    std::vector<std::byte> reply(calls::kMaxReply_cuMemGetInfo_v2);
    uint64_t got = 0;
    auto r = c.call_sync(
        ctx,
        [&](wire::Call::Builder call) {
          protocol::set_invoke(call, wire::Api::DRIVER, calls::k_cuMemGetInfo_v2, args.bytes(), true);
        },
        {}, shim::OutBuffer{reply.data(), reply.size(), &got});
    protocol::ArgReader reader(std::span<const std::byte>(reply.data(), got));
    if (r.result == CUDA_SUCCESS && !calls::unpack_cuMemGetInfo_v2(reader, free_bytes, &total)) {
      r.result = CUDA_ERROR_UNKNOWN;
    }
    return r;
  }

  uint64_t free_memory(Client& c, uint64_t ctx) {
    size_t free_bytes = 0;
    EXPECT_EQ(mem_get_info(c, ctx, &free_bytes).result, CUDA_SUCCESS);
    return free_bytes;
  }

  std::string token_ = "sesame";
  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(ServerTest, HandshakeDescribesTheDevices) {
  auto c = connect(token_);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_GE(c.value()->devices().size(), 1u);
  const auto& d = c.value()->devices()[0];
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.total_mem, 1ull << 30);
  ASSERT_GT(d.attributes.size(), static_cast<size_t>(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  EXPECT_EQ(d.attributes[CU_DEVICE_ATTRIBUTE_WARP_SIZE], 32);
  EXPECT_FALSE(d.attribute_missing[CU_DEVICE_ATTRIBUTE_WARP_SIZE]);
}

TEST_F(ServerTest, WrongTokenIsRefusedWithAReason) {
  auto c = connect("wrong");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("authentication"), std::string::npos) << c.status().message();
}

TEST_F(ServerTest, OtherProtocolVersionIsRefusedWithAReason) {
  std::mutex mu;
  std::condition_variable cv;
  std::string refusal;
  bool answered = false;
  transport::ConnectionHandler h;
  h.on_message = [&](transport::Connection&, transport::Message m) {
    auto d = protocol::decode(m.header);
    std::lock_guard<std::mutex> lock(mu);
    if (d.is_ok() && d.value()->envelope().isWelcome()) {
      auto w = d.value()->envelope().getWelcome();
      EXPECT_FALSE(w.getAccepted());
      refusal = w.getRefusal();
      answered = true;
      cv.notify_all();
    }
  };
  h.on_closed = [](transport::Connection&, const Status&) {};
  auto conn = transport_->connect(server_->address(), h, std::chrono::milliseconds(2000));
  ASSERT_TRUE(conn.is_ok());
  capnp::MallocMessageBuilder b;
  auto hello = b.initRoot<wire::Envelope>().initHello();
  hello.setProtocolVersion(wire::PROTOCOL_VERSION + 41);
  auto words = protocol::encode(b);
  ASSERT_TRUE(conn.value()->send(protocol::as_bytes(words)).is_ok());
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return answered; }));
  EXPECT_NE(refusal.find("protocol version " + std::to_string(wire::PROTOCOL_VERSION + 41)), std::string::npos)
      << refusal;
}

// The real client's connection, speaking `versions`, against the real server.
TEST_F(ServerTest, AClientWithAWiderRangeRunsAtTheServersVersion) {
  shim::ConnectionOptions o;
  o.server = server_->address();
  o.auth_token = token_;
  o.versions = {wire::MIN_PROTOCOL_VERSION, wire::PROTOCOL_VERSION + 4};
  o.features = ~uint64_t{0};
  auto c = shim::Connection::open(o, transport_, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const shim::SessionInfo& s = c.value()->session();
  EXPECT_EQ(s.protocol_version, wire::PROTOCOL_VERSION);
  EXPECT_EQ(s.server_versions.min, wire::MIN_PROTOCOL_VERSION);
  EXPECT_EQ(s.server_versions.max, wire::PROTOCOL_VERSION);
  EXPECT_EQ(s.features, protocol::kBuildFeatures);
  EXPECT_EQ(s.granted.devices, s.devices.size());
  EXPECT_EQ(s.granted.memory_bytes, 0u) << "no memory limit configured";
}

TEST_F(ServerTest, AClientOfOlderVersionsIsRefusedWithBothRangesNamed) {
  shim::ConnectionOptions o;
  o.server = server_->address();
  o.auth_token = token_;
  o.versions = {1, 2};
  auto c = shim::Connection::open(o, transport_, {});
  ASSERT_FALSE(c.is_ok());
  const std::string why = c.status().message();
  EXPECT_NE(why.find("refused"), std::string::npos) << why;
  EXPECT_NE(why.find("this client speaks protocol versions 1 to 2"), std::string::npos) << why;
  EXPECT_NE(why.find("the server protocol version " + std::to_string(wire::PROTOCOL_VERSION)), std::string::npos)
      << why;
}

TEST_F(ServerTest, TheGrantComesInTheWelcome) {
  ClientOptions o;
  o.server = server_->address();
  o.auth_token = token_;
  o.request.devices = 1;
  o.request.lease_seconds = 30;
  o.request.lease = "from-a-pool";
  auto c = Client::connect(o, transport_);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value()->session().granted.devices, c.value()->devices().size()) << "today every device";
  EXPECT_EQ(c.value()->session().granted.lease_seconds, 0u);
  EXPECT_EQ(c.value()->session().protocol_version, wire::PROTOCOL_VERSION);
}

TEST_F(ServerTest, AskingForMoreDevicesThanTheServerHasIsRefused) {
  ClientOptions o;
  o.server = server_->address();
  o.auth_token = token_;
  o.request.devices = 1000;
  auto c = Client::connect(o, transport_);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("asks for 1000 devices"), std::string::npos) << c.status().message();
}

// Allocates, copies 1 MiB there and back (payloads both ways) and frees,
// checking every answer; a wrong free is refused.
void allocate_copy_and_free(Client& client, uint64_t ctx) {
  auto alloc = client.call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(1 << 20); });
  ASSERT_EQ(alloc.result, CUDA_SUCCESS);
  uint64_t ptr = alloc.values.at(0);
  std::vector<unsigned char> src(1 << 20), back(1 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 13);
  auto put = client.call_sync(
      ctx,
      [&](wire::Call::Builder call) {
        auto in = call.initMemcpyHtoD();
        in.setStream(protocol::kNullStream);
        in.setDst(ptr);
        in.setSize(src.size());
      },
      transport::Bytes(reinterpret_cast<const std::byte*>(src.data()), src.size()));
  ASSERT_EQ(put.result, CUDA_SUCCESS);
  auto get = client.call_sync(
      ctx,
      [&](wire::Call::Builder call) {
        auto out = call.initMemcpyDtoH();
        out.setStream(protocol::kNullStream);
        out.setSrc(ptr);
        out.setSize(back.size());
      },
      {}, shim::OutBuffer{back.data(), back.size()});
  ASSERT_EQ(get.result, CUDA_SUCCESS);
  EXPECT_EQ(src, back);
  auto bad = client.call_sync(ctx, [&](wire::Call::Builder call) { call.setMemFree(ptr + 8); });
  EXPECT_EQ(bad.result, CUDA_ERROR_INVALID_VALUE);
  auto ok = client.call_sync(ctx, [&](wire::Call::Builder call) { call.setMemFree(ptr); });
  EXPECT_EQ(ok.result, CUDA_SUCCESS);
}

TEST_F(ServerTest, AllocateCopyAndFree) {
  auto c = connect(token_);
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c.value()->session().sealed) << "an in-process peer is local: --integrity auto leaves it unsealed";
  allocate_copy_and_free(*c.value(), context(*c.value()));
}

// A sealed session (rgpud --integrity on; transport/sealed.h) works as any
// other: the welcome, calls and replies, and payloads both ways carry tags.
TEST_F(ServerTest, ASealedSessionRunsCallsAndCopies) {
  server::ServerOptions options;
  options.listen = "sealed:1";
  options.integrity = protocol::IntegrityMode::kOn;
  auto sealed = start_server(options);
  ASSERT_TRUE(sealed.is_ok()) << sealed.status().to_string();
  ClientOptions o;
  o.server = sealed.value()->address();
  o.auth_token = token_;
  auto c = Client::connect(o, transport_);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c.value()->session().sealed);
  allocate_copy_and_free(*c.value(), context(*c.value()));
  // A client that insists is welcomed sealed by --integrity auto even from
  // this host, and refused by --integrity off, with the reason.
  o.server = server_->address();
  o.integrity = protocol::IntegrityMode::kOn;
  auto insisting = Client::connect(o, transport_);
  ASSERT_TRUE(insisting.is_ok()) << insisting.status().to_string();
  EXPECT_TRUE(insisting.value()->session().sealed);
  options.listen = "sealed:2";
  options.integrity = protocol::IntegrityMode::kOff;
  auto unsealed = start_server(options);
  ASSERT_TRUE(unsealed.is_ok());
  o.server = unsealed.value()->address();
  auto refused = Client::connect(o, transport_);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("--integrity off"), std::string::npos) << refused.status().to_string();
}

// What `rgpu session list` asks: the sessions of a server, with its admin key.
Result<std::vector<protocol::SessionSummary>> list_sessions(
    std::shared_ptr<transport::Transport> transport, const std::string& server, const std::string& key,
    protocol::AdminRequest request = {protocol::AdminCommand::kListSessions, 0}) {
  shim::ConnectionOptions o;
  o.server = server;
  o.auth_token = key;
  o.admin = request;
  auto c = shim::Connection::open(o, std::move(transport), {});
  if (!c.is_ok()) return c.status();
  return c.value()->session().listed;
}

// An operator sees each session (tenant, devices, memory held, age) with
// the admin key, sealed or not; nothing without it, and nothing from a
// server that has no admin key. A session that ends leaves the list.
TEST_F(ServerTest, AnOperatorListsTheSessionsWithTheAdminKey) {
  EXPECT_NE(list_sessions(transport_, server_->address(), "root").status().message().find("--admin-key-file"),
            std::string::npos)
      << "a server without an admin key refuses";
  for (const auto mode : {protocol::IntegrityMode::kAuto, protocol::IntegrityMode::kOn}) {
    SCOPED_TRACE(static_cast<int>(mode));
    server::ServerOptions options;
    options.listen = mode == protocol::IntegrityMode::kOn ? "admin:2" : "admin:1";
    options.integrity = mode;
    options.admin_key = "root";
    auto server = start_server(options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    const std::string address = server.value()->address();
    auto empty = list_sessions(transport_, address, "root");
    ASSERT_TRUE(empty.is_ok()) << empty.status().to_string();
    EXPECT_TRUE(empty.value().empty());

    ClientOptions co;
    co.server = address;
    co.auth_token = token_;
    auto c = Client::connect(co, transport_);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    const uint64_t ctx = context(*c.value());
    auto alloc = c.value()->call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(3 << 20); });
    ASSERT_EQ(alloc.result, CUDA_SUCCESS);
    auto listed = list_sessions(transport_, address, "root");
    ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
    ASSERT_EQ(listed.value().size(), 1u);
    const protocol::SessionSummary& s = listed.value()[0];
    EXPECT_EQ(s.id, c.value()->session().session_id);
    EXPECT_EQ(s.tenant, auth::kDefaultTenant);
    EXPECT_EQ(s.pid, static_cast<uint32_t>(getpid()));
    EXPECT_EQ(s.devices, std::vector<uint32_t>{0});
    EXPECT_EQ(s.memory_bytes, 3u << 20);
    EXPECT_LT(s.age_ms, 60000u);
    EXPECT_GE(s.calls, 1u);
    EXPECT_EQ(s.lease, 0u);

    for (const std::string& wrong : {token_, std::string("rooT"), std::string()}) {
      auto refused = list_sessions(transport_, address, wrong);
      ASSERT_FALSE(refused.is_ok()) << "key '" << wrong << "'";
      EXPECT_NE(refused.status().message().find(wrong.empty() ? "RGPU_ADMIN_KEY_FILE" : "wrong admin key"),
                std::string::npos)
          << refused.status().to_string();
    }
    c.value().reset();
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      auto after = list_sessions(transport_, address, "root");
      ASSERT_TRUE(after.is_ok()) << after.status().to_string();
      gone = after.value().empty();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the ended session is still listed";
  }
}

// An operator ends a session by id: its next call fails, and nothing of it
// is listed; an id that is not there is refused by name, and the other
// session goes on.
TEST_F(ServerTest, AnOperatorEndsASession) {
  server::ServerOptions options;
  options.listen = "admin:3";
  options.admin_key = "root";
  auto server = start_server(options);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  const std::string address = server.value()->address();
  ClientOptions co;
  co.server = address;
  co.auth_token = token_;
  auto doomed = Client::connect(co, transport_);
  auto other = Client::connect(co, transport_);
  ASSERT_TRUE(doomed.is_ok() && other.is_ok());
  const uint64_t ctx = context(*doomed.value());
  const uint64_t other_ctx = context(*other.value());
  ASSERT_EQ(doomed.value()->call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(1 << 20); }).result,
            CUDA_SUCCESS);
  const uint64_t id = doomed.value()->session().session_id;

  auto missing = list_sessions(transport_, address, "root", {protocol::AdminCommand::kEndSession, id + 100});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("no session " + std::to_string(id + 100)), std::string::npos)
      << missing.status().to_string();
  auto refused = list_sessions(transport_, address, token_, {protocol::AdminCommand::kEndSession, id});
  ASSERT_FALSE(refused.is_ok()) << "a tenant's key ends nothing";

  auto ended = list_sessions(transport_, address, "root", {protocol::AdminCommand::kEndSession, id});
  ASSERT_TRUE(ended.is_ok()) << ended.status().to_string();
  ASSERT_EQ(ended.value().size(), 1u);
  EXPECT_EQ(ended.value()[0].id, id);
  EXPECT_EQ(ended.value()[0].memory_bytes, 1u << 20);
  // A bare connection's session, ended too, hears why.
  shim::ConnectionOptions bare;
  bare.server = address;
  bare.auth_token = token_;
  auto told = shim::Connection::open(bare, transport_, {});
  ASSERT_TRUE(told.is_ok()) << told.status().to_string();
  ASSERT_TRUE(list_sessions(transport_, address, "root",
                            {protocol::AdminCommand::kEndSession, told.value()->session().session_id})
                  .is_ok());
  for (int i = 0; i < 500 && !told.value()->failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(told.value()->failed());
  EXPECT_EQ(told.value()->ended_reason(), "ended by an operator (rgpu session end)");
  CUresult after = CUDA_SUCCESS;
  for (int i = 0; i < 200 && after == CUDA_SUCCESS; ++i) {
    after = doomed.value()->call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(4096); }).result;
    if (after == CUDA_SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(after, CUDA_SUCCESS) << "the ended session still runs calls";
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    auto listed = list_sessions(transport_, address, "root");
    ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
    gone = listed.value().size() == 1 && listed.value()[0].id == other.value()->session().session_id;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "only the other session is listed";
  EXPECT_EQ(other.value()->call_sync(other_ctx, [](wire::Call::Builder call) { call.setMemAlloc(4096); }).result,
            CUDA_SUCCESS)
      << "the other session goes on";
}

TEST_F(ServerTest, SessionsCannotTouchEachOthersMemory) {
  auto a = connect(token_);
  auto b = connect(token_);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  uint64_t ca = context(*a.value()), cb = context(*b.value());
  auto alloc = a.value()->call_sync(ca, [](wire::Call::Builder call) { call.setMemAlloc(4096); });
  ASSERT_EQ(alloc.result, CUDA_SUCCESS);
  uint64_t ptr = alloc.values.at(0);
  auto steal = b.value()->call_sync(cb, [&](wire::Call::Builder call) {
    auto m = call.initMemset();
    m.setStream(protocol::kNullStream);
    m.setDst(ptr);
    m.setValue(0);
    m.setElementSize(1);
    m.setCount(16);
  });
  EXPECT_EQ(steal.result, CUDA_ERROR_INVALID_VALUE);
  auto free_other = b.value()->call_sync(cb, [&](wire::Call::Builder call) { call.setMemFree(ptr); });
  EXPECT_EQ(free_other.result, CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ServerTest, ClosedSessionReturnsItsMemory) {
  auto observer = connect(token_);
  ASSERT_TRUE(observer.is_ok());
  uint64_t co = context(*observer.value());
  uint64_t before = free_memory(*observer.value(), co);
  {
    auto c = connect(token_);
    ASSERT_TRUE(c.is_ok());
    uint64_t ctx = context(*c.value());
    for (int i = 0; i < 4; ++i) {
      auto r = c.value()->call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(32 << 20); });
      ASSERT_EQ(r.result, CUDA_SUCCESS);
    }
    EXPECT_LE(free_memory(*observer.value(), co) + (128 << 20), before);
  }  // the client goes away without freeing anything
  uint64_t after = 0;
  for (int i = 0; i < 200 && (after = free_memory(*observer.value(), co)) != before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(after, before);
}

// The error of an async call is returned once, by the next synchronizing
// call; a sync call that does not synchronize (a memory query) leaves it.
TEST_F(ServerTest, AsyncErrorIsReportedOnceAtTheNextSynchronizingCall) {
  auto c = connect(token_);
  ASSERT_TRUE(c.is_ok());
  Client& client = *c.value();
  uint64_t ctx = context(client);
  client.call_async(ctx, [](wire::Call::Builder call) {
    auto m = call.initMemset();
    m.setStream(protocol::kNullStream);
    m.setDst(0x1234);  // not an allocation
    m.setElementSize(1);
    m.setCount(1);
    m.setAsync(true);
  });
  size_t free_bytes = 0;
  EXPECT_EQ(mem_get_info(client, ctx, &free_bytes).result, CUDA_SUCCESS);
  auto synchronize = [&] {
    return client
        .call_sync(ctx, [](wire::Call::Builder call) { call.initStreamSynchronize().setHandle(protocol::kNullStream); })
        .result;
  };
  EXPECT_EQ(synchronize(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(synchronize(), CUDA_SUCCESS);
}

TEST_F(ServerTest, UnknownStreamHandleIsInvalid) {
  auto c = connect(token_);
  ASSERT_TRUE(c.is_ok());
  uint64_t ctx = context(*c.value());
  protocol::ArgWriter w;
  apigen::driver::pack_cuStreamQuery(w, protocol::make_handle(protocol::HandleKind::kStream, 0x999));
  auto r = c.value()->call_sync(ctx, [&](wire::Call::Builder call) {
    protocol::set_invoke(call, wire::Api::DRIVER, apigen::driver::k_cuStreamQuery, w.bytes(), true);
  });
  EXPECT_EQ(r.result, CUDA_ERROR_INVALID_HANDLE);
}

// A scripted rgpud on the in-process transport: `script` gets every decoded
// message from the client and answers on the connection it came by. The
// handlers may outlive this object (the transport reports the last message
// and the close later), so they share the script; a script that captures
// the test's locals touches them only for messages the test waits for.
class FakeServer {
 public:
  using Script = std::function<void(wire::Envelope::Reader, transport::Connection&)>;
  FakeServer(transport::Transport& transport, Script script) {
    auto shared = std::make_shared<Script>(std::move(script));
    auto l = transport.listen("fake:0", [shared](std::shared_ptr<transport::Connection>) {
      transport::ConnectionHandler h;
      h.on_message = [shared](transport::Connection& c, transport::Message m) {
        auto d = protocol::decode(m.header);
        ASSERT_TRUE(d.is_ok());
        (*shared)(d.value()->envelope(), c);
      };
      h.on_closed = [](transport::Connection&, const Status&) {};
      return h;
    });
    EXPECT_TRUE(l.is_ok());
    if (l.is_ok()) listener_ = std::move(l.value());
  }
  std::string address() const { return listener_ ? listener_->address() : ""; }

  template <class Fill>
  static void send(transport::Connection& c, Fill&& fill) {
    capnp::MallocMessageBuilder b;
    fill(b.initRoot<wire::Envelope>());
    auto words = protocol::encode(b);
    EXPECT_TRUE(c.send(protocol::as_bytes(words)).is_ok());
  }
  // An accepted welcome at `version`, the server speaking [version, version].
  static void welcome(transport::Connection& c, uint32_t version, const std::vector<uint8_t>& proof = {}) {
    send(c, [&](wire::Envelope::Builder e) {
      auto w = e.initWelcome();
      w.setAccepted(true);
      w.setProtocolVersion(version);
      w.setMinProtocolVersion(version);
      w.setMaxProtocolVersion(version);
      w.setFeatures(protocol::kBuildFeatures);
      if (!proof.empty()) w.setServerProof(kj::arrayPtr(proof.data(), proof.size()));
    });
  }

 private:
  std::unique_ptr<transport::Listener> listener_;
};

TEST_F(ServerTest, TheClientRefusesAVersionOutsideItsRange) {
  FakeServer fake(*transport_, [](wire::Envelope::Reader e, transport::Connection& c) {
    if (e.isHello()) FakeServer::welcome(c, wire::PROTOCOL_VERSION + 6);
  });
  shim::ConnectionOptions o;
  o.server = fake.address();
  auto c = shim::Connection::open(o, transport_, {});
  ASSERT_FALSE(c.is_ok());
  const std::string why = c.status().message();
  const std::string theirs = std::to_string(wire::PROTOCOL_VERSION + 6);
  EXPECT_NE(why.find("chose protocol version " + theirs), std::string::npos) << why;
  EXPECT_NE(why.find("this client speaks " + std::string(wire::MIN_PROTOCOL_VERSION == wire::PROTOCOL_VERSION
                                                             ? "protocol version "
                                                             : "protocol versions ") +
                     protocol::kBuildVersions.describe()),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("the server protocol version " + theirs), std::string::npos) << why;
}

// The challenge and the welcome arrive back to back, before the client has
// answered the first: both are read, in order.
TEST_F(ServerTest, AChallengeAndAWelcomeBackToBackAreBothRead) {
  const std::string secret = "back-to-back";
  FakeServer fake(*transport_, [secret](wire::Envelope::Reader e, transport::Connection& c) {
    if (!e.isHello()) return;  // the proof comes after the welcome; nothing to do
    auth::Nonce client{}, server{};
    auto n = e.getHello().getClientNonce();
    ASSERT_EQ(n.size(), client.size());
    std::memcpy(client.data(), n.begin(), n.size());
    server.fill(7);
    FakeServer::send(c, [&](wire::Envelope::Builder b) {
      b.initChallenge().setServerNonce(kj::arrayPtr(server.data(), server.size()));
    });
    const auth::Proof proof = auth::server_proof(secret, auth::kDefaultTenant, client, server);
    FakeServer::welcome(c, wire::PROTOCOL_VERSION, {proof.begin(), proof.end()});
  });
  shim::ConnectionOptions o;
  o.server = fake.address();
  o.auth_token = secret;
  auto c = shim::Connection::open(o, transport_, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value()->session().protocol_version, wire::PROTOCOL_VERSION);
}

// Sync calls ask for their reply and async calls do not; a status of
// another API reaches a driver caller as CUDA_ERROR_UNKNOWN with the
// original code and API kept, for async errors too.
TEST_F(ServerTest, RepliesCarryTheirApi) {
  std::mutex mu;
  std::vector<std::pair<uint64_t, bool>> seen;  // call id, wantsReply
  int replies = 0;
  FakeServer fake(*transport_, [&](wire::Envelope::Reader e, transport::Connection& c) {
    if (e.isHello()) return FakeServer::welcome(c, wire::PROTOCOL_VERSION);
    if (!e.isBatch()) return;
    for (auto box : e.getBatch().getCalls()) {
      auto call = box.getCall();
      std::lock_guard<std::mutex> lock(mu);
      seen.emplace_back(call.getId(), call.getWantsReply());
      if (!call.getWantsReply()) continue;
      const int n = replies++;
      FakeServer::send(c, [&](wire::Envelope::Builder b) {
        auto r = b.initReply();
        r.setId(call.getId());
        if (n == 0) {  // success, with an earlier async call's cuBLAS error
          r.setApi(wire::Api::DRIVER);
          r.setAsyncError(13);
          r.setAsyncErrorApi(wire::Api::CUBLAS);
          r.setAsyncErrorCall(1);
        } else if (n == 1) {  // a cuBLAS failure of the call itself
          r.setResult(7);
          r.setApi(wire::Api::CUBLAS);
        } else {  // another API's success; no API named: a driver code
          r.setResult(n == 2 ? 0 : CUDA_ERROR_INVALID_VALUE);
          r.setApi(n == 2 ? wire::Api::RUNTIME : wire::Api::NONE);
        }
      });
    }
  });
  ClientOptions o;
  o.server = fake.address();
  auto c = Client::connect(o, transport_);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Client& client = *c.value();
  client.call_async(1, [](wire::Call::Builder call) { call.setCtxSynchronize(); });
  auto sync = [&] { return client.call_sync(1, [](wire::Call::Builder call) { call.setCtxSynchronize(); }); };
  const shim::SyncResult first = sync();
  EXPECT_EQ(first.result, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(first.api, wire::Api::CUBLAS);
  EXPECT_EQ(first.code, 13u);
  const shim::SyncResult second = sync();
  EXPECT_EQ(second.result, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(second.api, wire::Api::CUBLAS);
  EXPECT_EQ(second.code, 7u);
  const shim::SyncResult third = sync();
  EXPECT_EQ(third.result, CUDA_SUCCESS);
  EXPECT_EQ(third.api, wire::Api::RUNTIME);
  const shim::SyncResult fourth = sync();
  EXPECT_EQ(fourth.result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fourth.api, wire::Api::DRIVER);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_FALSE(seen[0].second) << "the async call";
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_TRUE(seen[i].second) << "sync call " << i;
}

// A client that goes while its transport lives on (shared with the server)
// gets no calls from that transport afterwards; under ASan this was a
// use-after-free when the close was reported.
TEST_F(ServerTest, AClientMayGoBeforeItsSharedTransportReportsTheClose) {
  for (int i = 0; i < 20; ++i) {
    auto c = connect(token_);
    ASSERT_TRUE(c.is_ok());
    uint64_t ctx = context(*c.value());
    c.value()->call_async(ctx, [](wire::Call::Builder call) { call.setCtxSynchronize(); });
    c.value()->flush();
  }
  auto last = connect(token_);
  ASSERT_TRUE(last.is_ok()) << "the server and transport are still well";
  EXPECT_GE(free_memory(*last.value(), context(*last.value())), 1u);
}

// The transport is shared and outlives the server: its handlers for the
// server's connections may be running, or be called, while the server is
// destroyed. They finish before the server goes and do nothing after (ASan
// once saw a welcome touch the freed server).
TEST_F(ServerTest, HandshakesDuringTheServersDestructionTouchNothingOfIt) {
  std::atomic<bool> stop{false};
  std::atomic<int> welcomed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 3; ++t) {
    clients.emplace_back([&] {
      ClientOptions o;
      o.server = server_->address();
      o.auth_token = token_;
      o.connect_timeout = std::chrono::milliseconds(500);
      while (!stop.load()) {
        if (Client::connect(o, transport_).is_ok()) welcomed.fetch_add(1);
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (welcomed.load() < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_.reset();  // with handshakes in flight
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_GE(welcomed.load(), 6) << "the clients were welcomed before the server went";
}

}  // namespace
}  // namespace rgpu

namespace rgpu::server {
namespace {

// A connection that only counts registrations.
class CountingConnection final : public transport::Connection {
 public:
  Status send(transport::Bytes, transport::Bytes) override { return Status::ok(); }
  void close() override {}
  std::string peer() const override { return "test"; }
  Status register_memory(void*, size_t size) override {
    ++registered;
    bytes += size;
    return Status::ok();
  }
  void unregister_memory(void*) override { ++unregistered; }
  int registered = 0;
  int unregistered = 0;
  size_t bytes = 0;
};

TEST(StagingPool, ReusesRegisteredBuffersUpToItsLimit) {
  auto conn = std::make_shared<CountingConnection>();
  {
    StagingPool pool(conn, 4u << 20);
    {
      auto small = pool.acquire(100000);  // 128 KiB class
      ASSERT_TRUE(small);
      EXPECT_EQ(small.capacity(), 128u << 10);
      std::memset(small.get(), 1, 100000);  // writable
      auto large = pool.acquire(3u << 20);  // 4 MiB class
      ASSERT_TRUE(large);
      EXPECT_EQ(large.capacity(), 4u << 20);
      EXPECT_EQ(conn->registered, 2);
    }
    // The 4 MiB buffer went back first and filled the 4 MiB limit, so the
    // 128 KiB one was dropped.
    EXPECT_EQ(pool.bytes_cached(), 4u << 20);
    EXPECT_EQ(conn->unregistered, 1);
    auto large = pool.acquire(4u << 20);  // reused: nothing new registered
    EXPECT_EQ(conn->registered, 2);
    EXPECT_EQ(pool.bytes_cached(), 0u);
    auto small = pool.acquire(70000);  // made anew
    EXPECT_EQ(conn->registered, 3);
    EXPECT_EQ(pool.buffers_made(), 3u);
    StagingPool::Buffer moved = std::move(small);
    EXPECT_FALSE(small);
    EXPECT_TRUE(moved);
    EXPECT_FALSE(pool.acquire(0));
  }
  // Everything made was dropped again once the pool and its buffers were gone.
  EXPECT_EQ(conn->unregistered, conn->registered);
}

TEST(StagingPool, BufferMayOutliveThePool) {
  auto conn = std::make_shared<CountingConnection>();
  StagingPool::Buffer kept;
  {
    StagingPool pool(conn, 64u << 20);
    kept = pool.acquire(1u << 20);
    ASSERT_TRUE(kept);
  }
  std::memset(kept.get(), 2, 1u << 20);
  kept.reset();
  EXPECT_EQ(conn->registered, 1);
  EXPECT_EQ(conn->unregistered, 1);
}

}  // namespace
}  // namespace rgpu::server

namespace rgpu::server {
namespace {

// An image and its name: the SHA-256 of its bytes; stored with a NUL after.
struct TestImage {
  std::string hash;
  std::vector<std::byte> stored;
};
TestImage make_image(size_t size, char fill) {
  std::vector<std::byte> bytes(size, std::byte(fill));
  TestImage t;
  t.hash = fatbin::content_hash(fatbin::Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), size)).to_hex();
  bytes.push_back(std::byte{0});
  t.stored = std::move(bytes);
  return t;
}

class ModuleCacheDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rgpu-module-cache-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = std::string(tmpl) + "/images";
  }
  void TearDown() override { std::filesystem::remove_all(std::filesystem::path(dir_).parent_path()); }
  std::string dir_;
};

TEST_F(ModuleCacheDisk, ImagesSurviveANewCacheOnTheSameFolder) {
  auto a = make_image(1000, 'a');
  {
    auto cache = ModuleCache::open(ModuleCacheOptions{dir_, 1u << 20});
    ASSERT_TRUE(cache.is_ok()) << cache.status().to_string();
    EXPECT_EQ(cache.value()->find(a.hash), nullptr);
    cache.value()->insert(a.hash, a.stored);
  }
  auto cache = ModuleCache::open(ModuleCacheOptions{dir_, 1u << 20});
  ASSERT_TRUE(cache.is_ok());
  auto image = cache.value()->find(a.hash);
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(*image, a.stored);  // with its NUL byte
  EXPECT_EQ(cache.value()->stats().disk_hits, 1u);
  EXPECT_NE(cache.value()->find(a.hash), nullptr);
  EXPECT_EQ(cache.value()->stats().disk_hits, 1u) << "the second find is from memory";
}

TEST_F(ModuleCacheDisk, ADamagedFileIsDeletedAndMissed) {
  auto a = make_image(500, 'b');
  auto cache = ModuleCache::open(ModuleCacheOptions{dir_, 1u << 20});
  ASSERT_TRUE(cache.is_ok());
  cache.value()->insert(a.hash, a.stored);
  const std::string path = dir_ + "/" + a.hash;
  std::ofstream(path, std::ios::trunc) << "something else";
  auto fresh = ModuleCache::open(ModuleCacheOptions{dir_, 1u << 20});
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_EQ(fresh.value()->find(a.hash), nullptr);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(fresh.value()->stats().corrupt_files, 1u);
  // Names that are not hashes never reach the disk.
  EXPECT_EQ(fresh.value()->find("../../etc/passwd"), nullptr);
}

TEST_F(ModuleCacheDisk, MemoryLimitEvictsOldestButDiskKeepsThem) {
  auto cache = ModuleCache::open(ModuleCacheOptions{dir_, 2500});
  ASSERT_TRUE(cache.is_ok());
  auto a = make_image(1000, 'c'), b = make_image(1000, 'd'), c = make_image(1000, 'e');
  cache.value()->insert(a.hash, a.stored);
  cache.value()->insert(b.hash, b.stored);
  cache.value()->insert(c.hash, c.stored);  // over 2500 bytes: a goes
  EXPECT_EQ(cache.value()->stats().evictions, 1u);
  auto back = cache.value()->find(a.hash);  // from disk
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(*back, a.stored);
  EXPECT_EQ(cache.value()->stats().disk_hits, 1u);
}

TEST(ModuleCache, RefusesAFolderItCannotUse) {
  EXPECT_FALSE(ModuleCache::open(ModuleCacheOptions{"/proc/version", 1}).is_ok()) << "a file";
  EXPECT_FALSE(ModuleCache::open(ModuleCacheOptions{"/nonexistent-parent/x", 1}).is_ok());
  EXPECT_TRUE(ModuleCache::open(ModuleCacheOptions{"", 1}).is_ok()) << "memory only";
}

}  // namespace
}  // namespace rgpu::server
