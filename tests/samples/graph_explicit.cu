// graph_explicit: a CUDA graph built node by node, as the runtime's graph API
// is used without stream capture: a copy from pageable host memory, memsets
// (1-D and pitched 2-D of 16-bit values), two kernels, a copy to a __device__
// symbol, a copy back and a host function that reads what it brought, an
// event record node, a child graph. Instantiated and replayed with new inputs
// each time; then edited: kernel parameters set on the executable graph, the
// graph's own parameters moved in by cudaGraphExecUpdate, a topology change
// refused by it; cloned, queried (nodes, roots, edges, types), printed as DOT;
// a cycle refused at instantiation; conditional nodes refused.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL graph_explicit: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::printf("FAIL graph_explicit: %s (line %d)\n", #cond, __LINE__);            \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__device__ float g_scale;

constexpr int kThreads = 128;

// partial[b] = g_scale * k * sum of the block's inputs
__global__ void block_sums(const float* in, float* partial, float k, int n) {
  __shared__ float s[kThreads];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0] * k * g_scale;
}

__global__ void total(const float* partial, int blocks, float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    float sum = 0;
    for (int b = 0; b < blocks; ++b) sum += partial[b];
    out[0] = sum;
  }
}

__global__ void fill(int* out, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

struct HostCheck {
  const float* result;  // written by the copy node before the host node
  float seen = -1;
  int calls = 0;
};

void CUDART_CB on_host(void* data) {
  auto* c = static_cast<HostCheck*>(data);
  c->seen = *c->result;
  ++c->calls;
}

int main() {
  const int n = 1000;
  const int blocks = (n + kThreads - 1) / kThreads;
  std::vector<float> input(n);
  float *d_in, *d_partial, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  CHECK(cudaMalloc(&d_out, sizeof(float)));
  float result = 0;
  const float scale = 2.0f;
  HostCheck check{&result};
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t upload, clear, symbol, sums, sum, download, host, record;
  CHECK(cudaGraphAddMemcpyNode1D(&upload, graph, nullptr, 0, d_in, input.data(), n * sizeof(float),
                                 cudaMemcpyHostToDevice));
  cudaMemsetParams ms{};
  ms.dst = d_partial;
  ms.value = 0;
  ms.elementSize = 4;
  ms.width = blocks;
  ms.height = 1;
  CHECK(cudaGraphAddMemsetNode(&clear, graph, nullptr, 0, &ms));
  CHECK(cudaGraphAddMemcpyNodeToSymbol(&symbol, graph, nullptr, 0, g_scale, &scale, sizeof scale, 0,
                                       cudaMemcpyHostToDevice));
  float k = 1.0f;
  int count = n;
  void* sums_args[] = {&d_in, &d_partial, &k, &count};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(block_sums);
  kp.gridDim = dim3(blocks);
  kp.blockDim = dim3(kThreads);
  kp.kernelParams = sums_args;
  const cudaGraphNode_t before_sums[] = {upload, clear, symbol};
  CHECK(cudaGraphAddKernelNode(&sums, graph, before_sums, 3, &kp));
  int nblocks = blocks;
  void* total_args[] = {&d_partial, &nblocks, &d_out};
  cudaKernelNodeParams tp{};
  tp.func = reinterpret_cast<void*>(total);
  tp.gridDim = dim3(1);
  tp.blockDim = dim3(1);
  tp.kernelParams = total_args;
  CHECK(cudaGraphAddKernelNode(&sum, graph, &sums, 1, &tp));
  CHECK(cudaGraphAddMemcpyNode1D(&download, graph, &sum, 1, &result, d_out, sizeof(float), cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp{on_host, &check};
  CHECK(cudaGraphAddHostNode(&host, graph, &download, 1, &hp));
  CHECK(cudaGraphAddEventRecordNode(&record, graph, &host, 1, done));

  // The parameters were copied: changing the program's own after adding
  // changes nothing.
  k = 100.0f;
  count = 1;

  size_t nodes = 0, roots = 0, edges = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  CHECK(cudaGraphGetRootNodes(graph, nullptr, &roots));
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  EXPECT(nodes == 8 && roots == 3 && edges == 7);
  std::vector<cudaGraphNode_t> all(nodes);
  CHECK(cudaGraphGetNodes(graph, all.data(), &nodes));
  EXPECT(all[3] == sums);
  cudaGraphNodeType type;
  CHECK(cudaGraphNodeGetType(sums, &type));
  EXPECT(type == cudaGraphNodeTypeKernel);
  CHECK(cudaGraphNodeGetType(host, &type));
  EXPECT(type == cudaGraphNodeTypeHost);
  size_t deps = 0;
  CHECK(cudaGraphNodeGetDependencies(sums, nullptr, nullptr, &deps));
  EXPECT(deps == 3);
  cudaKernelNodeParams got{};
  CHECK(cudaGraphKernelNodeGetParams(sums, &got));
  EXPECT(got.func == reinterpret_cast<void*>(block_sums) && got.gridDim.x == static_cast<unsigned>(blocks));
  EXPECT(*static_cast<float*>(got.kernelParams[2]) == 1.0f && *static_cast<int*>(got.kernelParams[3]) == n);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // Each launch reads the host input as it is then.
  for (int round = 1; round <= 5; ++round) {
    double want = 0;
    for (int i = 0; i < n; ++i) {
      input[i] = static_cast<float>((i % 7) * round);
      want += input[i];
    }
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaStreamSynchronize(stream));
    EXPECT(result == static_cast<float>(want * scale));
    EXPECT(check.seen == result && check.calls == round);
  }
  const double base = [&] {
    double s = 0;
    for (float v : input) s += v;
    return s;
  }();

  // A kernel's parameters set on the executable graph only.
  float k3 = 3.0f;
  void* sums3[] = {&d_in, &d_partial, &k3, &count};
  count = n;
  kp.kernelParams = sums3;
  CHECK(cudaGraphExecKernelNodeSetParams(exec, sums, &kp));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(result == static_cast<float>(base * scale * 3));

  // The graph's own parameters, moved into the executable graph.
  float k5 = 5.0f;
  void* sums5[] = {&d_in, &d_partial, &k5, &count};
  kp.kernelParams = sums5;
  CHECK(cudaGraphKernelNodeSetParams(sums, &kp));
  cudaGraphExecUpdateResultInfo info{};
  CHECK(cudaGraphExecUpdate(exec, graph, &info));
  EXPECT(info.result == cudaGraphExecUpdateSuccess);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(result == static_cast<float>(base * scale * 5));

  // A clone runs the same, and knows which node each of its came from.
  cudaGraph_t copy;
  CHECK(cudaGraphClone(&copy, graph));
  cudaGraphNode_t sums_copy;
  CHECK(cudaGraphNodeFindInClone(&sums_copy, sums, copy));
  EXPECT(sums_copy != sums);
  CHECK(cudaGraphNodeGetType(sums_copy, &type));
  EXPECT(type == cudaGraphNodeTypeKernel);
  cudaGraphExec_t copy_exec;
  CHECK(cudaGraphInstantiate(&copy_exec, copy, 0));
  result = 0;
  CHECK(cudaGraphLaunch(copy_exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(result == static_cast<float>(base * scale * 5));

  // A topology change is refused by cudaGraphExecUpdate, which leaves the
  // executable graph as it was.
  cudaGraphNode_t extra;
  CHECK(cudaGraphAddEmptyNode(&extra, graph, &record, 1));
  EXPECT(cudaGraphExecUpdate(exec, graph, &info) == cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT(result == static_cast<float>(base * scale * 5));

  // DOT: every node and edge.
  const char* dot_path = "graph_explicit.dot";
  CHECK(cudaGraphDebugDotPrint(graph, dot_path, 0));
  FILE* f = std::fopen(dot_path, "r");
  EXPECT(f != nullptr);
  std::string dot;
  char buf[4096];
  for (size_t got_bytes; (got_bytes = std::fread(buf, 1, sizeof buf, f)) > 0;) dot.append(buf, got_bytes);
  std::fclose(f);
  std::remove(dot_path);
  size_t arrows = 0;
  for (size_t at = 0; (at = dot.find("->", at)) != std::string::npos; at += 2) ++arrows;
  EXPECT(dot.rfind("digraph", 0) == 0 && dot.find("block_sums") != std::string::npos && arrows == 8);

  // A child graph: pitched 2-D memset of 16-bit values, then a kernel; its
  // parent runs it after an empty node.
  const int rows = 4, cols = 6;
  size_t pitch = 0;
  unsigned short* grid;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&grid), &pitch, cols * sizeof(unsigned short), rows));
  int* filled;
  CHECK(cudaMalloc(&filled, 32 * sizeof(int)));
  cudaGraph_t child, parent;
  CHECK(cudaGraphCreate(&child, 0));
  cudaMemsetParams m2{};
  m2.dst = grid;
  m2.pitch = pitch;
  m2.value = 0xbeef;
  m2.elementSize = 2;
  m2.width = cols;
  m2.height = rows;
  cudaGraphNode_t c1, c2, p0, p1;
  CHECK(cudaGraphAddMemsetNode(&c1, child, nullptr, 0, &m2));
  int base_value = 40, fill_n = 32;
  void* fill_args[] = {&filled, &base_value, &fill_n};
  cudaKernelNodeParams fp{};
  fp.func = reinterpret_cast<void*>(fill);
  fp.gridDim = dim3(1);
  fp.blockDim = dim3(32);
  fp.kernelParams = fill_args;
  CHECK(cudaGraphAddKernelNode(&c2, child, &c1, 1, &fp));
  CHECK(cudaGraphCreate(&parent, 0));
  CHECK(cudaGraphAddEmptyNode(&p0, parent, nullptr, 0));
  CHECK(cudaGraphAddChildGraphNode(&p1, parent, &p0, 1, child));
  CHECK(cudaGraphDestroy(child));  // the node holds its own copy
  cudaGraph_t inner;
  CHECK(cudaGraphChildGraphNodeGetGraph(p1, &inner));
  size_t inner_nodes = 0;
  CHECK(cudaGraphGetNodes(inner, nullptr, &inner_nodes));
  EXPECT(inner_nodes == 2);
  cudaGraphExec_t parent_exec;
  CHECK(cudaGraphInstantiate(&parent_exec, parent, 0));
  CHECK(cudaGraphLaunch(parent_exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<unsigned short> g(pitch / sizeof(unsigned short) * rows);
  CHECK(cudaMemcpy(g.data(), grid, pitch * rows, cudaMemcpyDeviceToHost));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) EXPECT(g[r * pitch / sizeof(unsigned short) + c] == 0xbeef);
  }
  std::vector<int> fv(32);
  CHECK(cudaMemcpy(fv.data(), filled, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) EXPECT(fv[i] == 40 + i);

  // A cycle cannot be instantiated; removing the edge makes it valid again.
  cudaGraph_t loop;
  CHECK(cudaGraphCreate(&loop, 0));
  cudaGraphNode_t a, b;
  CHECK(cudaGraphAddEmptyNode(&a, loop, nullptr, 0));
  CHECK(cudaGraphAddEmptyNode(&b, loop, &a, 1));
  CHECK(cudaGraphAddDependencies(loop, &b, &a, nullptr, 1));
  cudaGraphExec_t loop_exec;
  EXPECT(cudaGraphInstantiate(&loop_exec, loop, 0) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaGraphRemoveDependencies(loop, &b, &a, nullptr, 1));
  CHECK(cudaGraphInstantiate(&loop_exec, loop, 0));
  CHECK(cudaGraphExecDestroy(loop_exec));

  // Conditional nodes are refused, clearly.
  cudaGraphNodeParams cond{};
  cond.type = cudaGraphNodeTypeConditional;
  cudaGraphNode_t c;
  EXPECT(cudaGraphAddNode(&c, loop, nullptr, nullptr, 0, &cond) == cudaErrorNotSupported);
  cudaGetLastError();

  CHECK(cudaGraphExecDestroy(parent_exec));
  CHECK(cudaGraphExecDestroy(copy_exec));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(parent));
  CHECK(cudaGraphDestroy(loop));
  CHECK(cudaGraphDestroy(copy));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(stream));
  std::printf("PASS graph_explicit\n");
  return 0;
}
