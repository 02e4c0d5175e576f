// Per-session device memory quotas on the CPU device: the grant, the
// allocation check at the byte, and what the session is told about its
// device (cuMemGetInfo, the welcome's device table).
#include <gtest/gtest.h>

#include <cstdlib>

#include "client.h"
#include "connection.h"
#include "driver_pack.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu {
namespace {

using shim::Client;
using shim::ClientOptions;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kQuota = 64 * kMiB;

class QuotaTest : public ::testing::Test {
 protected:
  void SetUp() override { start(kQuota); }

  void start(uint64_t session_memory) {
    setenv("RGPU_CPU_DEVICE_MEMORY", "1G", 1);
    server_.reset();
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    transport_ = transport::make_inproc_transport();
    server::ServerOptions options;
    options.listen = "server:1";
    options.insecure = true;  // the in-process transport reaches nothing outside the test
    options.session_memory = session_memory;
    auto server = server::Server::start(driver.value(), transport_, options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server.value());
  }

  Result<std::unique_ptr<Client>> connect(uint64_t memory_request = 0) {
    ClientOptions o;
    o.server = server_->address();
    o.connect_timeout = std::chrono::milliseconds(5000);
    o.request.memory_bytes = memory_request;
    return Client::connect(o, transport_);
  }

  static uint64_t context(Client& c) {
    c.call_async(0, [](wire::Call::Builder call) {
      auto p = call.initPrimaryCtxRetain();
      p.setHandle(protocol::primary_context(0));
      p.setDevice(0);
    });
    return protocol::primary_context(0);
  }

  static shim::SyncResult alloc(Client& c, uint64_t ctx, uint64_t size) {
    return c.call_sync(ctx, [&](wire::Call::Builder call) { call.setMemAlloc(size); });
  }
  static CUresult free_memory(Client& c, uint64_t ctx, uint64_t ptr) {
    return c.call_sync(ctx, [&](wire::Call::Builder call) { call.setMemFree(ptr); }).result;
  }

  // cuMemGetInfo as the client library sends it: a generated call.
  static void mem_get_info(Client& c, uint64_t ctx, size_t* free_bytes, size_t* total) {
    namespace calls = apigen::driver;
    protocol::ArgWriter args;
    calls::pack_cuMemGetInfo_v2(args, free_bytes, total);
    std::vector<std::byte> reply(calls::kMaxReply_cuMemGetInfo_v2);
    uint64_t got = 0;
    auto r = c.call_sync(
        ctx,
        [&](wire::Call::Builder call) {
          protocol::set_invoke(call, wire::Api::DRIVER, calls::k_cuMemGetInfo_v2, args.bytes(), true);
        },
        {}, shim::OutBuffer{reply.data(), reply.size(), &got});
    ASSERT_EQ(r.result, CUDA_SUCCESS);
    protocol::ArgReader reader(std::span<const std::byte>(reply.data(), got));
    ASSERT_TRUE(calls::unpack_cuMemGetInfo_v2(reader, free_bytes, total));
  }

  static uint64_t free_of(Client& c, uint64_t ctx) {
    size_t f = 0, t = 0;
    mem_get_info(c, ctx, &f, &t);
    return f;
  }

  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(QuotaTest, TheSessionSeesItsQuotaAsTheDevice) {
  auto c = connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Client& client = *c.value();
  EXPECT_EQ(client.session().granted.memory_bytes, kQuota);
  ASSERT_GE(client.devices().size(), 1u);
  EXPECT_EQ(client.devices()[0].total_mem, kQuota) << "cuDeviceTotalMem answers from the welcome";
  const uint64_t ctx = context(client);
  size_t f = 0, t = 0;
  mem_get_info(client, ctx, &f, &t);
  EXPECT_EQ(t, kQuota);
  EXPECT_EQ(f, kQuota);
}

TEST_F(QuotaTest, AllocationsStopExactlyAtTheQuota) {
  auto c = connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Client& client = *c.value();
  const uint64_t ctx = context(client);
  // Pieces that add up to the quota exactly, one of them odd-sized.
  const uint64_t pieces[] = {32 * kMiB, 16 * kMiB, 16 * kMiB - 4097, 4097};
  std::vector<uint64_t> ptrs;
  uint64_t held = 0;
  for (uint64_t size : pieces) {
    auto r = alloc(client, ctx, size);
    ASSERT_EQ(r.result, CUDA_SUCCESS) << "after " << held << " bytes";
    ptrs.push_back(r.values.at(0));
    held += size;
    EXPECT_EQ(free_of(client, ctx), kQuota - held);
  }
  ASSERT_EQ(held, kQuota);
  EXPECT_EQ(alloc(client, ctx, 1).result, CUDA_ERROR_OUT_OF_MEMORY) << "one byte past the quota";
  EXPECT_EQ(alloc(client, ctx, 32 * kMiB).result, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(free_of(client, ctx), 0u);

  // A free returns its bytes, to the byte.
  ASSERT_EQ(free_memory(client, ctx, ptrs[3]), CUDA_SUCCESS);
  EXPECT_EQ(free_of(client, ctx), 4097u);
  EXPECT_EQ(alloc(client, ctx, 4098).result, CUDA_ERROR_OUT_OF_MEMORY);
  auto again = alloc(client, ctx, 4097);
  ASSERT_EQ(again.result, CUDA_SUCCESS);
  EXPECT_EQ(alloc(client, ctx, 1).result, CUDA_ERROR_OUT_OF_MEMORY);

  ASSERT_EQ(free_memory(client, ctx, ptrs[0]), CUDA_SUCCESS);
  auto big = alloc(client, ctx, 32 * kMiB);
  ASSERT_EQ(big.result, CUDA_SUCCESS);
  EXPECT_EQ(free_of(client, ctx), 0u);
}

TEST_F(QuotaTest, EachSessionHasItsOwnQuota) {
  auto a = connect();
  auto b = connect();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const uint64_t ca = context(*a.value()), cb = context(*b.value());
  auto fa = alloc(*a.value(), ca, kQuota);
  ASSERT_EQ(fa.result, CUDA_SUCCESS);
  EXPECT_EQ(free_of(*a.value(), ca), 0u);
  EXPECT_EQ(free_of(*b.value(), cb), kQuota) << "a's use is not b's";
  EXPECT_EQ(alloc(*b.value(), cb, kQuota).result, CUDA_SUCCESS);
  EXPECT_EQ(alloc(*b.value(), cb, 1).result, CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(free_memory(*a.value(), ca, fa.values.at(0)), CUDA_SUCCESS);
  EXPECT_EQ(free_of(*a.value(), ca), kQuota);
  EXPECT_EQ(free_of(*b.value(), cb), 0u);
}

TEST_F(QuotaTest, ASmallerRequestIsTheSessionsQuota) {
  auto c = connect(16 * kMiB);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  Client& client = *c.value();
  EXPECT_EQ(client.session().granted.memory_bytes, 16 * kMiB);
  EXPECT_EQ(client.devices()[0].total_mem, 16 * kMiB);
  const uint64_t ctx = context(client);
  EXPECT_EQ(alloc(client, ctx, 16 * kMiB + 1).result, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(alloc(client, ctx, 16 * kMiB).result, CUDA_SUCCESS);
}

TEST_F(QuotaTest, ARequestAboveTheCapIsRefusedAtConnect) {
  auto c = connect(kQuota + 1);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("grants at most 67108864"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("--session-memory"), std::string::npos) << c.status().message();
}

TEST_F(QuotaTest, WithoutACapARequestIsStillEnforced) {
  start(0);
  auto none = connect();
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_EQ(none.value()->session().granted.memory_bytes, 0u) << "no request, no cap: no quota";
  EXPECT_EQ(none.value()->devices()[0].total_mem, uint64_t{1} << 30);
  auto c = connect(8 * kMiB);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const uint64_t ctx = context(*c.value());
  EXPECT_EQ(alloc(*c.value(), ctx, 8 * kMiB + 1).result, CUDA_ERROR_OUT_OF_MEMORY);
  size_t f = 0, t = 0;
  mem_get_info(*c.value(), ctx, &f, &t);
  EXPECT_EQ(t, 8 * kMiB);
  auto more = connect((uint64_t{1} << 30) + 1);
  ASSERT_FALSE(more.is_ok());
  EXPECT_NE(more.status().message().find("largest device"), std::string::npos) << more.status().message();
}

// RGPU_REQUEST is read by the client at connect; a bad one stops it there.
TEST_F(QuotaTest, TheRequestComesFromTheEnvironment) {
  setenv("RGPU_REQUEST", "devices=1,mem=8M", 1);
  auto c = connect();
  unsetenv("RGPU_REQUEST");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value()->session().granted.memory_bytes, 8 * kMiB);

  setenv("RGPU_REQUEST", "devices=1,mem=lots", 1);
  auto bad = connect();
  unsetenv("RGPU_REQUEST");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("RGPU_REQUEST"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("'lots' is not a size"), std::string::npos) << bad.status().message();

  setenv("RGPU_REQUEST_MEMORY", "2G", 1);
  auto above = connect();
  unsetenv("RGPU_REQUEST_MEMORY");
  ASSERT_FALSE(above.is_ok()) << "2 GiB is above the 64 MiB cap";
}

}  // namespace
}  // namespace rgpu
