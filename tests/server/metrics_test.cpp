// What rgpud records for operators (docs/metrics.md), read from its registry
// after real calls over the in-process transport on the CPU device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "client.h"
#include "connection.h"
#include "rgpu/common/metrics.h"
#include "rgpu/common/metrics_text.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu {
namespace {

using shim::Client;
using shim::ClientOptions;

constexpr uint64_t kMiB = uint64_t{1} << 20;

class ServerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RGPU_CPU_DEVICE_MEMORY", "1G", 1);
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    transport_ = transport::make_inproc_transport();
    server::ServerOptions options;
    options.listen = "server:1";
    options.insecure = true;
    options.slices = {"0:256M@0.5,128M@0.5"};
    options.metrics = &registry_;
    options.admin_key = "root";
    auto server = server::Server::start(driver.value(), transport_, options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server.value());
  }
  void TearDown() override { server_.reset(); }

  Result<std::unique_ptr<Client>> connect() {
    ClientOptions o;
    o.server = server_->address();
    o.connect_timeout = std::chrono::milliseconds(5000);
    return Client::connect(o, transport_);
  }

  // The value of `name` with all of `labels`, or -1 when there is none.
  double value(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels) {
    auto samples = metrics::parse_text(registry_.render());
    EXPECT_TRUE(samples.is_ok());
    if (!samples.is_ok()) return -1;
    for (const auto& s : samples.value()) {
      bool match = s.name == name;
      for (const auto& [k, v] : labels) match = match && s.label(k) == v;
      if (match) return s.value;
    }
    return -1;
  }

  // value(), once it is `want` (bounded): a call is counted just after its
  // reply has gone, so the client may ask before the count is in.
  double eventually(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                    double want) {
    double v = value(name, labels);
    for (int i = 0; i < 500 && v != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      v = value(name, labels);
    }
    return v;
  }

  metrics::Registry registry_;  // outlives the server
  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(ServerMetricsTest, CallsCopiesSlicesAndSessionsAreCounted) {
  auto c = connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Client& client = *c.value();
  const uint64_t ctx = protocol::primary_context(0);
  client.call_async(0, [](wire::Call::Builder call) {
    auto p = call.initPrimaryCtxRetain();
    p.setHandle(protocol::primary_context(0));
    p.setDevice(0);
  });
  auto alloc = client.call_sync(ctx, [](wire::Call::Builder call) { call.setMemAlloc(4 << 20); });
  ASSERT_EQ(alloc.result, CUDA_SUCCESS);
  std::vector<unsigned char> src(3 << 20, 5);
  auto put = client.call_sync(
      ctx,
      [&](wire::Call::Builder call) {
        auto in = call.initMemcpyHtoD();
        in.setStream(protocol::kNullStream);
        in.setDst(alloc.values.at(0));
        in.setSize(src.size());
      },
      transport::Bytes(reinterpret_cast<const std::byte*>(src.data()), src.size()));
  ASSERT_EQ(put.result, CUDA_SUCCESS);

  // The session went to the best fitting slice: 0.1, of 128 MiB.
  EXPECT_EQ(eventually("rgpu_calls_total", {{"call", "memcpyHtoD"}}, 1), 1);
  EXPECT_EQ(value("rgpu_calls_total", {{"tenant", "default"}, {"api", "driver"}, {"call", "memAlloc"}}), 1);
  EXPECT_EQ(eventually("rgpu_call_duration_seconds_count", {{"api", "driver"}, {"mode", "sync"}}, 2), 2);
  EXPECT_EQ(eventually("rgpu_copy_bytes_total",
                       {{"device", "0"}, {"slice", "1"}, {"tenant", "default"}, {"direction", "host_to_device"}},
                       3 << 20),
            3 << 20);
  EXPECT_EQ(value("rgpu_slice_memory_used_bytes", {{"device", "0"}, {"slice", "1"}}), 4 << 20);
  EXPECT_EQ(value("rgpu_slice_memory_used_bytes", {{"device", "0"}, {"slice", "0"}}), 0);
  EXPECT_EQ(value("rgpu_slice_memory_quota_bytes", {{"device", "0"}, {"slice", "0"}}), 256 * kMiB);
  EXPECT_EQ(value("rgpu_slice_sessions", {{"slice", "1"}}), 1);
  EXPECT_EQ(value("rgpu_device_memory_used_bytes", {{"device", "0"}}), 4 << 20);
  EXPECT_EQ(value("rgpu_sessions", {{"tenant", "default"}}), 1);
  EXPECT_EQ(value("rgpu_session_info", {{"tenant", "default"}, {"devices", "0.1"}}), 1);
  EXPECT_EQ(value("rgpu_session_memory_used_bytes", {}), 4 << 20);
  EXPECT_EQ(value("rgpu_session_copy_bytes_total", {{"direction", "host_to_device"}}), 3 << 20);
  EXPECT_GE(value("rgpu_session_calls_total", {}), 3);
  EXPECT_EQ(value("rgpu_device_info", {{"device", "0"}, {"kind", "cpu"}}), 1);
  EXPECT_GE(value("rgpu_device_utilization_ratio", {{"device", "0"}}), 0);

  // Two slices, one session each: the third client is refused, and counted.
  auto second = connect();
  ASSERT_TRUE(second.is_ok());
  auto third = connect();
  EXPECT_FALSE(third.is_ok());
  EXPECT_EQ(value("rgpu_connections_refused_total", {{"reason", "no_slice"}}), 1);
  EXPECT_EQ(value("rgpu_sessions_opened_total", {{"tenant", "default"}}), 2);

  // A closed session's own series go; the counts by tenant stay.
  c.value().reset();
  second.value().reset();
  for (int i = 0; i < 500 && server_->session_count() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(value("rgpu_session_info", {}), -1);
  EXPECT_EQ(value("rgpu_calls_total", {{"call", "memAlloc"}}), 1);
}

// Operator requests that proved the admin key are counted by command and
// outcome; a wrong key is a refused handshake.
TEST_F(ServerMetricsTest, OperatorRequestsAreCounted) {
  auto ask = [&](const std::string& key, protocol::AdminRequest request) {
    shim::ConnectionOptions o;
    o.server = server_->address();
    o.auth_token = key;
    o.admin = request;
    return shim::Connection::open(o, transport_, {}).is_ok();
  };
  EXPECT_TRUE(ask("root", {protocol::AdminCommand::kListSessions, 0}));
  EXPECT_TRUE(ask("root", {protocol::AdminCommand::kListSessions, 0}));
  EXPECT_FALSE(ask("root", {protocol::AdminCommand::kEndSession, 999}));
  EXPECT_FALSE(ask("wrong", {protocol::AdminCommand::kListSessions, 0}));
  EXPECT_EQ(value("rgpu_operator_requests_total", {{"command", "list_sessions"}, {"outcome", "done"}}), 2);
  EXPECT_EQ(value("rgpu_operator_requests_total", {{"command", "end_session"}, {"outcome", "refused"}}), 1);
  EXPECT_EQ(value("rgpu_connections_refused_total", {{"reason", "handshake"}}), 1);
}

TEST_F(ServerMetricsTest, StoppingTheServerUnregistersItsCollectors) {
  EXPECT_NE(registry_.render().find("rgpu_slice_share"), std::string::npos);
  server_.reset();
  const std::string page = registry_.render();  // reads nothing of the gone server
  EXPECT_EQ(page.find("rgpu_slice_share"), std::string::npos);
  EXPECT_NE(page.find("rgpu_calls_total"), std::string::npos);  // recorded families stay
}

}  // namespace
}  // namespace rgpu
