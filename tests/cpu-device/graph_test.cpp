// Tests of stream capture and graphs: what a capture records instead of
// running, replays, cross-stream joins through events, and the rules that
// invalidate a capture.
#include <atomic>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  data.push_back('\0');
  return data;
}

void CUDA_CB count_up(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

class CpuDeviceGraph : public CpuDeviceTest {
 protected:
  void SetUp() override {
    CpuDeviceTest::SetUp();
    fatbin_ = read_file(RGPU_CPUDEV_TEST_FATBIN);
    CU_OK(cu.cuModuleLoadData(&mod_, fatbin_.data()));
    CU_OK(cu.cuStreamCreate(&s1_, CU_STREAM_NON_BLOCKING));
    CU_OK(cu.cuStreamCreate(&s2_, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override {
    cu.cuStreamDestroy(s1_);
    cu.cuStreamDestroy(s2_);
    CpuDeviceTest::TearDown();
  }
  CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuModuleGetFunction(&f, mod_, name));
    return f;
  }
  std::vector<char> fatbin_;
  CUmodule mod_ = nullptr;
  CUstream s1_ = nullptr, s2_ = nullptr;
};

TEST_F(CpuDeviceGraph, CaptureAcrossTwoStreamsThenReplayTenTimes) {
  const int n = 256;
  std::vector<float> a(n), b(n), out(n, -1);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * i;
  }
  CUdeviceptr da, db, dc, dout, dcount;
  CU_OK(cu.cuMemAlloc(&da, n * 4));
  CU_OK(cu.cuMemAlloc(&db, n * 4));
  CU_OK(cu.cuMemAlloc(&dc, n * 4));
  CU_OK(cu.cuMemAlloc(&dout, n * 4));
  CU_OK(cu.cuMemAlloc(&dcount, 4));
  CU_OK(cu.cuMemcpyHtoD(db, b.data(), n * 4));
  CU_OK(cu.cuMemsetD32(dcount, 0, 1));
  CU_OK(cu.cuMemsetD32(dout, 7, n));
  CUevent fork, join;
  CU_OK(cu.cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  CU_OK(cu.cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
  std::atomic<int> host_calls{0};

  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status;
  CU_OK(cu.cuStreamIsCapturing(s1_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);
  CU_OK(cu.cuStreamIsCapturing(s2_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  CU_OK(cu.cuMemsetD32Async(dc, 0, n, s1_));
  CU_OK(cu.cuMemcpyHtoDAsync(da, a.data(), n * 4, s1_));
  CU_OK(cu.cuEventRecord(fork, s1_));
  // s2 joins the capture by waiting for an event recorded in it.
  CU_OK(cu.cuStreamWaitEvent(s2_, fork, 0));
  CU_OK(cu.cuStreamIsCapturing(s2_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);
  void* bump_args[] = {&dcount};
  CU_OK(cu.cuLaunchKernel(fn("bump"), 1, 1, 1, 1, 1, 1, 0, s2_, bump_args, nullptr));
  CU_OK(cu.cuEventRecord(join, s2_));
  CU_OK(cu.cuStreamWaitEvent(s1_, join, 0));
  int count = n;
  void* add_args[] = {&da, &db, &dc, &count};
  CU_OK(cu.cuLaunchKernel(fn("vec_add"), (n + 63) / 64, 1, 1, 64, 1, 1, 0, s1_, add_args, nullptr));
  CU_OK(cu.cuMemcpyDtoDAsync(dout, dc, n * 4, s1_));
  CU_OK(cu.cuLaunchHostFunc(s1_, &count_up, &host_calls));
  cuuint64_t id = 0;
  CUgraph during = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 0;
  CU_OK(cu.cuStreamGetCaptureInfo(s1_, &status, &id, &during, &deps, nullptr, &ndeps));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);
  EXPECT_NE(0u, id);
  EXPECT_EQ(1u, ndeps);
  CUgraph graph = nullptr;
  CU_OK(cu.cuStreamEndCapture(s1_, &graph));
  ASSERT_NE(nullptr, graph);
  EXPECT_EQ(during, graph);
  CU_OK(cu.cuStreamIsCapturing(s2_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);

  // Nothing ran during the capture.
  CU_OK(cu.cuCtxSynchronize());
  EXPECT_EQ(0, host_calls.load());
  CU_OK(cu.cuMemcpyDtoH(out.data(), dout, n * 4));
  uint32_t seven = 7;
  float as_float;
  std::memcpy(&as_float, &seven, 4);
  EXPECT_EQ(as_float, out[3]);

  size_t nodes = 0;
  CU_OK(cu.cuGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(6u, nodes);  // memset, memcpy, bump, vec_add, memcpy, host
  std::vector<CUgraphNode> list(nodes);
  CU_OK(cu.cuGraphGetNodes(graph, list.data(), &nodes));
  CUgraphNodeType type;
  CU_OK(cu.cuGraphNodeGetType(list[0], &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_MEMSET, type);
  CU_OK(cu.cuGraphNodeGetType(list[2], &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_KERNEL, type);
  CU_OK(cu.cuGraphNodeGetType(list[5], &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_HOST, type);

  CUgraphExec exec = nullptr;
  CU_OK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  CU_OK(cu.cuGraphUpload(exec, s1_));
  for (int r = 0; r < 10; ++r) {
    // A replay reads the host buffer as it is when the copy runs.
    for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i + r);
    CU_OK(cu.cuGraphLaunch(exec, s1_));
    CU_OK(cu.cuStreamSynchronize(s1_));
    CU_OK(cu.cuMemcpyDtoH(out.data(), dout, n * 4));
    for (int i = 0; i < n; ++i) ASSERT_EQ(static_cast<float>(i + r) + 0.5f * i, out[i]) << r << " " << i;
  }
  int bumps = 0;
  CU_OK(cu.cuMemcpyDtoH(&bumps, dcount, 4));
  EXPECT_EQ(10, bumps);
  EXPECT_EQ(10, host_calls.load());
  CU_OK(cu.cuGraphExecDestroy(exec));
  CU_OK(cu.cuGraphDestroy(graph));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGraphDestroy(graph));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGraphLaunch(exec, s1_));
  for (CUdeviceptr p : {da, db, dc, dout, dcount}) CU_OK(cu.cuMemFree(p));
  CU_OK(cu.cuEventDestroy(fork));
  CU_OK(cu.cuEventDestroy(join));
}

TEST_F(CpuDeviceGraph, SynchronizingACapturingStreamInvalidatesTheCapture) {
  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cu.cuStreamSynchronize(s1_));
  CUstreamCaptureStatus status;
  CU_OK(cu.cuStreamIsCapturing(s1_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_INVALIDATED, status);
  std::atomic<int> calls{0};
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cu.cuLaunchHostFunc(s1_, &count_up, &calls));
  CUgraph graph = reinterpret_cast<CUgraph>(1);
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cu.cuStreamEndCapture(s1_, &graph));
  EXPECT_EQ(nullptr, graph);
  CU_OK(cu.cuStreamIsCapturing(s1_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  CU_OK(cu.cuStreamSynchronize(s1_));
  EXPECT_EQ(0, calls.load());
}

TEST_F(CpuDeviceGraph, CaptureModesDecideWhichUnsafeCallsAreRefused) {
  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  // Relaxed: the thread may allocate during a global capture.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_OK(cu.cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(CU_STREAM_CAPTURE_MODE_GLOBAL, mode);
  CUdeviceptr p = 0;
  CU_OK(cu.cuMemAlloc(&p, 4096));
  CU_OK(cu.cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(CU_STREAM_CAPTURE_MODE_RELAXED, mode);
  // Global (the default): refused, and the capture is invalidated.
  CUdeviceptr q = 0;
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cu.cuMemAlloc(&q, 4096));
  CUgraph graph = nullptr;
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cu.cuStreamEndCapture(s1_, &graph));
  // No capture any more: allowed again.
  CU_OK(cu.cuMemFree(p));

  // A relaxed capture forbids nothing; a thread-local one only its own thread.
  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_RELAXED));
  CU_OK(cu.cuMemAlloc(&p, 4096));
  CU_OK(cu.cuStreamEndCapture(s1_, &graph));
  CU_OK(cu.cuGraphDestroy(graph));
  CU_OK(cu.cuMemFree(p));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuThreadExchangeStreamCaptureMode(nullptr));
}

TEST_F(CpuDeviceGraph, LegacyStreamWorkDuringACaptureOfABlockingStreamIsImplicit) {
  CUstream blocking;
  CU_OK(cu.cuStreamCreate(&blocking, 0));
  CU_OK(cu.cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cu.cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_RELAXED));
  std::atomic<int> calls{0};
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cu.cuLaunchHostFunc(nullptr, &count_up, &calls));
  CUgraph graph = nullptr;
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cu.cuStreamEndCapture(blocking, &graph));
  CU_OK(cu.cuStreamDestroy(blocking));
}

TEST_F(CpuDeviceGraph, AForkedStreamThatNeverJoinsBackIsUnjoined) {
  CUevent fork;
  CU_OK(cu.cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  std::atomic<int> calls{0};
  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cu.cuEventRecord(fork, s1_));
  CU_OK(cu.cuStreamWaitEvent(s2_, fork, 0));
  CU_OK(cu.cuLaunchHostFunc(s2_, &count_up, &calls));
  CUgraph graph = nullptr;
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cu.cuStreamEndCapture(s1_, &graph));
  EXPECT_EQ(nullptr, graph);
  CUstreamCaptureStatus status;
  CU_OK(cu.cuStreamIsCapturing(s2_, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  // Ending from a stream that only joined is a mismatch.
  CU_OK(cu.cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cu.cuEventRecord(fork, s1_));
  CU_OK(cu.cuStreamWaitEvent(s2_, fork, 0));
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cu.cuStreamEndCapture(s2_, &graph));
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cu.cuStreamEndCapture(s1_, &graph));
  CU_OK(cu.cuStreamSynchronize(s2_));
  EXPECT_EQ(0, calls.load());
  CU_OK(cu.cuEventDestroy(fork));
}

TEST_F(CpuDeviceGraph, ExplicitGraphRunsItsNodesInDependencyOrder) {
  CUgraph graph;
  CU_OK(cu.cuGraphCreate(&graph, 0));
  std::atomic<int> calls{0};
  CUDA_HOST_NODE_PARAMS host{&count_up, &calls};
  CUgraphNode first, empty, second;
  CU_OK(cu.cuGraphAddHostNode(&first, graph, nullptr, 0, &host));
  CU_OK(cu.cuGraphAddEmptyNode(&empty, graph, &first, 1));
  CU_OK(cu.cuGraphAddHostNode(&second, graph, &empty, 1, &host));
  CUgraphNode bogus = reinterpret_cast<CUgraphNode>(&calls);
  CUgraphNode ignored;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuGraphAddEmptyNode(&ignored, graph, &bogus, 1));
  size_t n = 0;
  CU_OK(cu.cuGraphGetRootNodes(graph, nullptr, &n));
  EXPECT_EQ(1u, n);
  CUgraphNodeType type;
  CU_OK(cu.cuGraphNodeGetType(empty, &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_EMPTY, type);
  std::string path = ::testing::TempDir() + "rgpu_graph_test.dot";
  CU_OK(cu.cuGraphDebugDotPrint(graph, path.c_str(), 0));
  std::ifstream dot(path);
  std::string text((std::istreambuf_iterator<char>(dot)), std::istreambuf_iterator<char>());
  EXPECT_NE(std::string::npos, text.find("n0 -> n1"));
  EXPECT_NE(std::string::npos, text.find("n1 -> n2"));
  std::remove(path.c_str());
  CUgraphExec exec;
  CU_OK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  // The executable graph is independent of the graph it came from.
  CU_OK(cu.cuGraphDestroy(graph));
  for (int i = 0; i < 3; ++i) CU_OK(cu.cuGraphLaunch(exec, s1_));
  CU_OK(cu.cuStreamSynchronize(s1_));
  EXPECT_EQ(6, calls.load());
  CU_OK(cu.cuGraphExecDestroy(exec));
}

void CUDA_CB count_destroy(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(100); }

TEST_F(CpuDeviceGraph, UserObjectsLiveAsLongAsTheGraphAndItsExecutables) {
  std::atomic<int> state{0};
  CUgraph graph;
  CU_OK(cu.cuGraphCreate(&graph, 0));
  CUuserObject owner;
  CU_OK(cu.cuUserObjectCreate(&owner, &state, &count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CU_OK(cu.cuGraphRetainUserObject(graph, owner, 1, CU_GRAPH_USER_OBJECT_MOVE));
  CUDA_HOST_NODE_PARAMS host{&count_up, &state};
  CUgraphNode node;
  CU_OK(cu.cuGraphAddHostNode(&node, graph, nullptr, 0, &host));
  CUgraphExec exec;
  CU_OK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  CU_OK(cu.cuGraphDestroy(graph));
  EXPECT_EQ(0, state.load());  // the executable graph still holds it
  CU_OK(cu.cuGraphLaunch(exec, s1_));
  CU_OK(cu.cuStreamSynchronize(s1_));
  EXPECT_EQ(1, state.load());
  CU_OK(cu.cuGraphExecDestroy(exec));
  EXPECT_EQ(101, state.load());
}

}  // namespace
}  // namespace rgpu::cpudev::test
