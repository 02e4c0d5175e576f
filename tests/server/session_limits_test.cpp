// Per-session limits on what a client's async copies make the server hold:
// bytes in flight (--limit inflight-bytes) and pending waits and copy
// completions (--limit waits). A copy past the bytes in flight waits for
// room (back-pressure); one that could never fit, or one past the waits,
// fails with CUDA_ERROR_OUT_OF_MEMORY and the session goes on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "client.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu {
namespace {

using shim::Client;

constexpr uint64_t kKiB = 1024;

// A host function that holds its stream until released, so that the copies
// queued behind it stay in flight.
struct Hold {
  std::atomic<bool> release{false};
  static void CUDA_CB run(void* self) {
    auto* hold = static_cast<Hold*>(self);
    for (int i = 0; i < 20000 && !hold->release.load(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
};

class SessionLimitsTest : public ::testing::Test {
 protected:
  void start(const server::ServerLimits& limits) {
    setenv("RGPU_CPU_DEVICE_MEMORY", "256M", 1);
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    transport_ = transport::make_inproc_transport();
    server::ServerOptions options;
    options.listen = "127.0.0.1:1";  // a name in process; loopback needs no keys
    options.limits = limits;
    auto server = server::Server::start(driver.value(), transport_, options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server.value());
    shim::ClientOptions o;
    o.server = server_->address();
    o.connect_timeout = std::chrono::milliseconds(5000);
    auto c = Client::connect(o, transport_);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    client_ = std::move(c.value());
    ctx_ = protocol::primary_context(0);
    client_->call_async(0, [&](wire::Call::Builder call) {
      auto p = call.initPrimaryCtxRetain();
      p.setHandle(ctx_);
      p.setDevice(0);
    });
    auto alloc = client_->call_sync(ctx_, [](wire::Call::Builder call) { call.setMemAlloc(1 << 20); });
    ASSERT_EQ(alloc.result, CUDA_SUCCESS);
    ptr_ = alloc.values.at(0);
    std::vector<unsigned char> bytes(1 << 20);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    auto put = client_->call_sync(
        ctx_,
        [&](wire::Call::Builder call) {
          auto in = call.initMemcpyHtoD();
          in.setStream(protocol::kNullStream);
          in.setDst(ptr_);
          in.setSize(bytes.size());
        },
        transport::Bytes(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    ASSERT_EQ(put.result, CUDA_SUCCESS);
    expect_ = std::move(bytes);
  }
  void TearDown() override {
    hold_.release = true;
    client_.reset();
    server_.reset();
  }

  // Copies `size` bytes from offset `at` into `dst`, async on the null stream.
  void copy_out(void* dst, uint64_t at, uint64_t size) {
    client_->copy_out_async(ctx_, ptr_ + at, dst, size, protocol::kNullStream);
  }
  // The null stream waits behind a host function until hold_ is released.
  void hold_stream() { client_->host_func_async(ctx_, protocol::kNullStream, &Hold::run, &hold_); }
  // A synchronous call that waits for nothing and goes after everything
  // queued: once it is answered the server has issued the copies, behind the
  // host function. Its result is the first async error since the last one.
  CUresult sync_point() {
    return client_->call_sync(ctx_, [](wire::Call::Builder call) { call.setMemAlloc(4096); }).result;
  }
  // Releases the stream and returns the first error of the copies.
  CUresult finish() {
    hold_.release = true;
    client_->flush();
    return client_->wait_copy_outs(protocol::kNullStream);
  }
  bool same(const std::vector<unsigned char>& got, uint64_t at) const {
    return std::equal(got.begin(), got.end(), expect_.begin() + static_cast<ptrdiff_t>(at));
  }

  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<Client> client_;
  uint64_t ctx_ = 0;
  uint64_t ptr_ = 0;
  std::vector<unsigned char> expect_;
  Hold hold_;
};

TEST_F(SessionLimitsTest, ACopyPastTheInflightBytesWaitsForRoom) {
  server::ServerLimits limits;
  limits.max_inflight_bytes = 256 * kKiB;
  ASSERT_NO_FATAL_FAILURE(start(limits));
  std::vector<unsigned char> a(128 * kKiB), b(128 * kKiB), c(128 * kKiB);
  hold_stream();
  copy_out(a.data(), 0, a.size());
  copy_out(b.data(), a.size(), b.size());  // 256 KiB held: the limit
  copy_out(c.data(), 0, c.size());         // waits for room, as a GPU's copy engine would
  // The session's next call runs after the waiting copy: only once the
  // stream lets the first two land (back-pressure, not a failure).
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    hold_.release = true;
  });
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(sync_point(), CUDA_SUCCESS);
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(40));
  releaser.join();
  EXPECT_EQ(finish(), CUDA_SUCCESS);
  EXPECT_TRUE(same(a, 0));
  EXPECT_TRUE(same(b, a.size()));
  EXPECT_TRUE(same(c, 0));
}

TEST_F(SessionLimitsTest, ACopyLargerThanTheInflightBytesFailsAndTheSessionGoesOn) {
  server::ServerLimits limits;
  limits.max_inflight_bytes = 256 * kKiB;
  ASSERT_NO_FATAL_FAILURE(start(limits));
  std::vector<unsigned char> big(512 * kKiB);
  copy_out(big.data(), 0, big.size());  // could never fit: refused at once
  EXPECT_EQ(finish(), CUDA_ERROR_OUT_OF_MEMORY);
  // The session is still there, and so is its memory.
  std::vector<unsigned char> again(256 * kKiB);
  copy_out(again.data(), 4096, again.size());
  EXPECT_EQ(client_->wait_copy_outs(protocol::kNullStream), CUDA_SUCCESS);
  EXPECT_TRUE(same(again, 4096));
}

TEST_F(SessionLimitsTest, ACopyPastTheSessionsWaitsFailsAndTheSessionGoesOn) {
  server::ServerLimits limits;
  limits.max_session_waits = 2;
  ASSERT_NO_FATAL_FAILURE(start(limits));
  std::vector<unsigned char> a(64), b(64), c(64);
  hold_stream();
  copy_out(a.data(), 0, a.size());
  copy_out(b.data(), 64, b.size());
  copy_out(c.data(), 128, c.size());  // a third completion pending: past the limit
  // An allocation does not take the refusal: it is for a synchronizing call.
  EXPECT_EQ(sync_point(), CUDA_SUCCESS);
  EXPECT_EQ(finish(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(same(a, 0));
  EXPECT_TRUE(same(b, 64));
  auto reported = client_->call_sync(ctx_, [](wire::Call::Builder call) {
    call.initStreamSynchronize().setHandle(protocol::kNullStream);
  });
  EXPECT_EQ(reported.result, CUDA_ERROR_OUT_OF_MEMORY);
  std::vector<unsigned char> again(64);
  copy_out(again.data(), 256, again.size());
  EXPECT_EQ(client_->wait_copy_outs(protocol::kNullStream), CUDA_SUCCESS);
  EXPECT_TRUE(same(again, 256));
  // A synchronize past the limit is served too (on the session's thread).
  hold_.release = false;
  hold_stream();
  std::vector<unsigned char> d(64), e(64);
  copy_out(d.data(), 0, d.size());
  copy_out(e.data(), 64, e.size());
  EXPECT_EQ(sync_point(), CUDA_SUCCESS);  // both pending: the limit reached, not passed
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    hold_.release = true;
  });
  auto sync = client_->call_sync(ctx_, [](wire::Call::Builder call) {
    call.initStreamSynchronize().setHandle(protocol::kNullStream);
  });
  releaser.join();
  EXPECT_EQ(sync.result, CUDA_SUCCESS);
  EXPECT_EQ(client_->wait_copy_outs(protocol::kNullStream), CUDA_SUCCESS);
  EXPECT_TRUE(same(d, 0));
  EXPECT_TRUE(same(e, 64));
}

}  // namespace
}  // namespace rgpu
