// The model of graphs built node by node (graph_nodes.cpp, graph_edit.cpp):
// nodes, graphs and executable graphs, kept by the client under one mutex,
// and the helpers the runtime's graph calls share. Private to the runtime.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../api_common.h"
#include "rgpu/protocol/handles.h"
#include "runtime.h"

namespace rgpu::runtime::graph_model {

struct Node {
  uint64_t handle = 0;
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  std::vector<uint64_t> deps;  // nodes of the same graph this one waits for
  // Kernel: the function as the program named it (host stub) and as the
  // driver launches it, and a copy of its parameters.
  const void* func = nullptr;
  CUfunction function = nullptr;
  dim3 grid, block;
  unsigned shared = 0;
  std::vector<unsigned char> args;
  std::vector<size_t> arg_offsets;
  std::vector<void*> arg_pointers;  // into args, for GetParams
  cudaMemcpy3DParms copy{};
  cudaMemsetParams memset{};
  cudaHostNodeParams host{};
  cudaEvent_t event = nullptr;
  uint64_t child = 0;  // a child graph node's own copy of its graph
};

struct Graph {
  std::vector<Node> nodes;  // in the order they were added
  // Clones: the node of the original each node was cloned from.
  std::unordered_map<uint64_t, uint64_t> cloned_from;
};

// An executable graph: the nodes' work in the order it is queued, and where
// each node of the graph it was made from (top level) sits in that order.
struct Exec {
  std::vector<Node> steps;
  std::unordered_map<uint64_t, size_t> step_of;
  uint64_t flags = 0;
};

extern std::mutex g_mu;
extern std::unordered_map<uint64_t, Graph> g_graphs;
extern std::unordered_map<uint64_t, uint64_t> g_node_graph;
extern std::unordered_map<uint64_t, Exec> g_execs;
extern uint64_t g_serial;

inline uint64_t mint(rgpu::protocol::HandleKind kind) { return rgpu::protocol::make_handle(kind, ++g_serial); }
inline uint64_t h(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline bool is(const void* p, rgpu::protocol::HandleKind kind) { return p != nullptr && rgpu::protocol::kind_of(h(p)) == kind; }

// Callers of these hold g_mu (graph_nodes.cpp describes each).
Graph* graph_of(cudaGraph_t g);
Node* node_of(cudaGraphNode_t n, Graph** graph = nullptr);
void drop_node(Node& n);
void forget(uint64_t graph);
uint64_t clone_graph(uint64_t from, std::unordered_map<uint64_t, uint64_t>* map);
bool order(const Graph& g, std::vector<const Node*>* out);
bool flatten(const Graph& g, std::vector<Node>* steps, std::unordered_map<uint64_t, size_t>* step_of);
cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t count, Node node);
cudaError_t kernel_node(const cudaKernelNodeParams* p, Node* n);
cudaError_t copy_node(const cudaMemcpy3DParms* p, Node* n);
cudaMemcpy3DParms linear_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t memset_node(const cudaMemsetParams* p, Node* n);
cudaError_t host_node(const cudaHostNodeParams* p, Node* n);
bool reads_host(const cudaMemcpy3DParms& p);
cudaError_t run_memset(const cudaMemsetParams& p, CUstream s);
cudaError_t run(const std::vector<Node>& steps, CUstream s);
cudaError_t answer(const std::vector<uint64_t>& all, cudaGraphNode_t* out, size_t* count);

// The node of `type` named by `node`, under the lock; `apply` reads or
// changes it.
template <typename F>
cudaError_t with_node(cudaGraphNode_t node, cudaGraphNodeType type, F apply) {
  std::lock_guard<std::mutex> lock(g_mu);
  Node* n = node_of(node);
  if (!n || n->type != type) return cudaErrorInvalidValue;
  return apply(*n);
}

// The step of executable graph `exec` made from node `node` of `type`.
template <typename F>
cudaError_t with_step(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeType type, F apply) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto e = g_execs.find(h(exec));
  if (e == g_execs.end()) return cudaErrorInvalidValue;
  auto at = e->second.step_of.find(h(node));
  if (at == e->second.step_of.end()) return cudaErrorInvalidValue;
  Node& n = e->second.steps[at->second];
  if (n.type != type) return cudaErrorInvalidValue;
  return apply(n);
}

// Runs `body` as a runtime entry point: the context made current first, its
// result recorded.
template <typename F>
cudaError_t entry(F body) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  return record(body());
  RT_END
}

}  // namespace rgpu::runtime::graph_model
