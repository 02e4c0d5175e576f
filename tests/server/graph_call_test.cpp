// Call.graph in rgpud on the CPU device: virtual memory objects and graphs
// are the session's own (another session naming them is refused), mapped
// ranges are what copies and memsets may reach, chunks count against the
// quota, capture state is the server stream's, and client-side work in a
// capture runs at every replay.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <initializer_list>

#include "client.h"
#include "connection.h"
#include "driver_pack.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/codec.h"
#include "rgpu/protocol/graph_ops.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/server/server.h"
#include "rgpu/transport/transport.h"

namespace rgpu {
namespace {

using protocol::GraphOp;
using shim::Client;
using shim::ClientOptions;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kChunk = 2 * kMiB;

class GraphCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RGPU_CPU_DEVICE_MEMORY", "1G", 1);
    auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
    ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
    transport_ = transport::make_inproc_transport();
    server::ServerOptions options;
    options.listen = "server:1";
    options.insecure = true;  // the in-process transport reaches nothing outside the test
    options.session_memory = 16 * kMiB;
    auto server = server::Server::start(driver.value(), transport_, options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server.value());
  }

  std::unique_ptr<Client> connect() {
    ClientOptions o;
    o.server = server_->address();
    o.connect_timeout = std::chrono::milliseconds(5000);
    auto c = Client::connect(o, transport_);
    EXPECT_TRUE(c.is_ok());
    c.value()->call_async(0, [](wire::Call::Builder call) {
      auto p = call.initPrimaryCtxRetain();
      p.setHandle(protocol::primary_context(0));
      p.setDevice(0);
    });
    return std::move(c.value());
  }

  static shim::SyncResult graph(Client& c, GraphOp op, std::initializer_list<uint64_t> args) {
    return c.call_sync(kCtx, [&](wire::Call::Builder call) {
      auto g = call.initGraph();
      g.setOp(static_cast<uint16_t>(op));
      auto list = g.initArgs(static_cast<unsigned>(args.size()));
      unsigned i = 0;
      for (uint64_t a : args) list.set(i++, a);
    });
  }
  // A non-blocking stream, created as the client's cuStreamCreate does.
  static void create_stream(Client& c, uint64_t stream) {
    protocol::ArgWriter w;
    apigen::driver::pack_cuStreamCreate(w, stream, CU_STREAM_NON_BLOCKING);
    c.call_async(kCtx, [&](wire::Call::Builder call) {
      protocol::set_invoke(call, wire::Api::DRIVER, apigen::driver::k_cuStreamCreate, w.bytes(), false);
    });
  }
  static CUresult memset(Client& c, uint64_t dst, uint64_t count) {
    return c.call_sync(kCtx, [&](wire::Call::Builder call) {
               auto m = call.initMemset();
               m.setDst(dst);
               m.setValue(7);
               m.setElementSize(4);
               m.setCount(count);
               m.setStream(protocol::kNullStream);
             }).result;
  }

  static constexpr uint64_t kCtx = protocol::primary_context(0);
  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(GraphCallTest, MappedChunksAreTheSessionsOwnAndReachableAcrossChunks) {
  auto a = connect();
  auto b = connect();
  auto reserve = graph(*a, GraphOp::kAddressReserve, {4 * kChunk, 0, 0});
  ASSERT_EQ(CUDA_SUCCESS, reserve.result);
  const uint64_t base = reserve.values.at(0);
  uint64_t chunk[2];
  for (auto& h : chunk) {
    auto r = graph(*a, GraphOp::kMemCreate, {0, kChunk});
    ASSERT_EQ(CUDA_SUCCESS, r.result);
    h = r.values.at(0);
  }
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemMap, {base, kChunk, chunk[0]}).result);
  // Another session can neither map this session's chunk nor use its range.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kMemMap, {base + kChunk, kChunk, chunk[1]}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kMemRelease, {chunk[1]}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemMap, {base + kChunk, kChunk, chunk[1]}).result);
  // Mapped but not accessible: not in the ledger yet.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, memset(*a, base, 16));
  EXPECT_EQ(CUDA_SUCCESS,
            graph(*a, GraphOp::kMemSetAccess, {base, 2 * kChunk, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE}).result);
  // One memset across both chunks; none past them, none from the other session.
  EXPECT_EQ(CUDA_SUCCESS, memset(*a, base + kChunk - 1024, 512));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, memset(*a, base + 2 * kChunk - 1024, 512));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, memset(*b, base, 16));
  auto retained = graph(*a, GraphOp::kMemRetain, {base + kChunk + 8});
  ASSERT_EQ(CUDA_SUCCESS, retained.result);
  EXPECT_EQ(chunk[1], retained.values.at(0));
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemRelease, {chunk[1]}).result);
  // Unmapping takes the range away; the reservation goes once empty.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kAddressFree, {base, 4 * kChunk}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemUnmap, {base + kChunk, kChunk}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, memset(*a, base + kChunk - 1024, 512));
  EXPECT_EQ(CUDA_SUCCESS, memset(*a, base, 16));
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemUnmap, {base, kChunk}).result);
  for (uint64_t h : chunk) EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kMemRelease, {h}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kAddressFree, {base, 4 * kChunk}).result);
}

TEST_F(GraphCallTest, ChunksCountAgainstTheQuota) {
  auto a = connect();
  int made = 0;
  for (; made < 16; ++made) {
    if (graph(*a, GraphOp::kMemCreate, {0, kChunk}).result != CUDA_SUCCESS) break;
  }
  EXPECT_EQ(8, made);  // 16 MiB of 2 MiB chunks
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kMemCreate, {1, kChunk}).result);  // not its device
}

TEST_F(GraphCallTest, GraphsAndCapturesAreTheSessionsOwn) {
  auto a = connect();
  auto b = connect();
  auto created = graph(*a, GraphOp::kGraphCreate, {});
  ASSERT_EQ(CUDA_SUCCESS, created.result);
  const uint64_t g = created.values.at(0);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kInstantiate, {g, 0}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kGraphDestroy, {g}).result);
  auto exec = graph(*a, GraphOp::kInstantiate, {g, 0});
  ASSERT_EQ(CUDA_SUCCESS, exec.result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kLaunch, {exec.values.at(0), protocol::kNullStream}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kLaunch, {exec.values.at(0), protocol::kNullStream}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kExecDestroy, {exec.values.at(0)}).result);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kGraphDestroy, {g}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kGraphDestroy, {g}).result);

  // The legacy stream cannot capture; a created stream can, and while it
  // does, work with client-side effects on it is refused and invalidates it.
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            graph(*a, GraphOp::kBeginCapture, {protocol::kNullStream, CU_STREAM_CAPTURE_MODE_GLOBAL}).result);
  const uint64_t stream = protocol::make_handle(protocol::HandleKind::kStream, protocol::kFirstMintedSerial + 7);
  create_stream(*a, stream);
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kRefuseIfCapturing, {stream}).result);
  ASSERT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kBeginCapture, {stream, CU_STREAM_CAPTURE_MODE_GLOBAL}).result);
  auto info = graph(*a, GraphOp::kCaptureInfo, {stream});
  ASSERT_EQ(CUDA_SUCCESS, info.result);
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, info.values.at(0));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, graph(*b, GraphOp::kCaptureInfo, {stream}).result);
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, graph(*a, GraphOp::kRefuseIfCapturing, {stream}).result);
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, graph(*a, GraphOp::kEndCapture, {stream}).result);
  info = graph(*a, GraphOp::kCaptureInfo, {stream});
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, info.values.at(0));
}

// Work with effects on the client, on a capturing stream, becomes host steps
// of the graph (Client::capture_host_step): every replay runs the host
// function, reads the client's bytes when the graph reaches the copy in and
// lands the copied-back bytes before the step after it. The server checks
// what a step names like any copy, and only the session's own graph clones.
TEST_F(GraphCallTest, HostStepsRunAtEveryReplay) {
  using protocol::HostStepKind;
  auto a = connect();
  auto b = connect();
  const uint64_t stream = protocol::make_handle(protocol::HandleKind::kStream, protocol::kFirstMintedSerial + 9);
  create_stream(*a, stream);
  auto alloc = a->call_sync(kCtx, [](wire::Call::Builder call) { call.setMemAlloc(4096); });
  ASSERT_EQ(CUDA_SUCCESS, alloc.result);
  const uint64_t dev = alloc.values.at(0);
  std::vector<uint32_t> in(256), out(256);
  struct Counter {
    int runs = 0;
    std::vector<uint32_t>* in;
  } counter{0, &in};
  // Before the copy in: this replay's input.
  auto prepare = [](void* p) {
    auto* c = static_cast<Counter*>(p);
    ++c->runs;
    for (size_t i = 0; i < c->in->size(); ++i) (*c->in)[i] = static_cast<uint32_t>(c->runs * 1000 + i);
  };

  // Not capturing: nothing is recorded and the caller does the work itself.
  bool recorded = true;
  EXPECT_EQ(CUDA_SUCCESS, a->capture_host_step(kCtx, stream, HostStepKind::kRun, prepare, &counter, nullptr, 0, 0,
                                               &recorded));
  EXPECT_FALSE(recorded);

  ASSERT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kBeginCapture, {stream, CU_STREAM_CAPTURE_MODE_GLOBAL}).result);
  // What the server refuses: an id without the step bit, a kind it does not
  // know, a copy outside the session's memory or past the largest step, a
  // run with an address.
  const uint64_t id = protocol::kHostStepIdBit | 77;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kCaptureHostStep, {stream, 77, 0, 0, 0}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kCaptureHostStep, {stream, id, 3, dev, 16}).result);
  EXPECT_NE(CUDA_SUCCESS, graph(*a, GraphOp::kCaptureHostStep, {stream, id, 1, dev + 4000, 200}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            graph(*a, GraphOp::kCaptureHostStep, {stream, id, 1, dev, protocol::kMaxHostStepBytes + 1}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*a, GraphOp::kCaptureHostStep, {stream, id, 0, dev, 0}).result);
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, graph(*b, GraphOp::kCaptureHostStep, {stream, id, 0, 0, 0}).result);
  // None of those broke the capture.
  auto info = graph(*a, GraphOp::kCaptureInfo, {stream});
  ASSERT_EQ(CUDA_SUCCESS, info.result);
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, info.values.at(0));

  // prepare; copy in to dev; copy dev back out.
  ASSERT_EQ(CUDA_SUCCESS, a->capture_host_step(kCtx, stream, HostStepKind::kRun, prepare, &counter, nullptr, 0, 0,
                                               &recorded));
  EXPECT_TRUE(recorded);
  ASSERT_EQ(CUDA_SUCCESS, a->capture_host_step(kCtx, stream, HostStepKind::kCopyIn, nullptr, nullptr, in.data(), dev,
                                               in.size() * 4, &recorded));
  EXPECT_TRUE(recorded);
  ASSERT_EQ(CUDA_SUCCESS, a->capture_host_step(kCtx, stream, HostStepKind::kCopyOut, nullptr, nullptr, out.data(),
                                               dev, out.size() * 4, &recorded));
  EXPECT_TRUE(recorded);
  auto ended = graph(*a, GraphOp::kEndCapture, {stream});
  ASSERT_EQ(CUDA_SUCCESS, ended.result);
  const uint64_t g = ended.values.at(0);
  EXPECT_EQ(0, counter.runs);  // captured, not run

  // Another session cannot clone the graph; its owner can, steps included.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, graph(*b, GraphOp::kGraphClone, {g}).result);
  auto clone = graph(*a, GraphOp::kGraphClone, {g});
  ASSERT_EQ(CUDA_SUCCESS, clone.result);
  auto exec = graph(*a, GraphOp::kInstantiate, {clone.values.at(0), 0});
  ASSERT_EQ(CUDA_SUCCESS, exec.result);
  ASSERT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kGraphDestroy, {g}).result);
  ASSERT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kGraphDestroy, {clone.values.at(0)}).result);
  for (int replay = 1; replay <= 3; ++replay) {
    std::fill(out.begin(), out.end(), 0u);
    ASSERT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kLaunch, {exec.values.at(0), stream}).result);
    ASSERT_EQ(CUDA_SUCCESS, a->call_sync(kCtx, [&](wire::Call::Builder call) {
                                call.initStreamSynchronize().setHandle(stream);
                              }).result);
    EXPECT_EQ(replay, counter.runs);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(static_cast<uint32_t>(replay * 1000 + i), out[i]) << "replay " << replay << " element " << i;
    }
  }
  EXPECT_EQ(CUDA_SUCCESS, graph(*a, GraphOp::kExecDestroy, {exec.values.at(0)}).result);
}

}  // namespace
}  // namespace rgpu
