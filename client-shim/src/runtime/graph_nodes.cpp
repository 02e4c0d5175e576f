// Runtime API: graphs built node by node (cudaGraphCreate, cudaGraphAdd*Node)
// and their executable graphs.
//
// Such a graph is the client's own object: a list of nodes with their
// parameters (copied when added, as CUDA copies them) and their edges.
// Instantiating it fixes an order of its nodes that respects every edge
// (child graphs inlined); launching the executable graph queues the nodes'
// work on the stream in that order: kernels, copies, memsets, host functions
// and event records and waits. A serialization of the graph runs exactly
// what the graph says, and every node kind works, those with client-side
// effects too (a copy to or from this process's memory, a host function),
// which a graph held by rgpud could not. Graphs made by stream capture stay
// rgpud's (capture.cpp); both kinds share the cudaGraph_t calls, told apart
// by their handle's kind. docs/compatibility.md, "Graphs".
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "../api_common.h"
#include "rgpu/protocol/handles.h"
#include "graph_model.h"
#include "runtime.h"

using namespace rgpu::runtime;
using rgpu::protocol::HandleKind;
using namespace rgpu::runtime::graph_model;

namespace rgpu::runtime::graph_model {

std::mutex g_mu;
std::unordered_map<uint64_t, Graph> g_graphs;
std::unordered_map<uint64_t, uint64_t> g_node_graph;  // node -> its graph
std::unordered_map<uint64_t, Exec> g_execs;
uint64_t g_serial = 0x100;

// Callers hold g_mu.
Graph* graph_of(cudaGraph_t g) {
  auto it = g_graphs.find(h(g));
  return it == g_graphs.end() ? nullptr : &it->second;
}
Node* node_of(cudaGraphNode_t n, Graph** graph) {
  auto it = g_node_graph.find(h(n));
  if (it == g_node_graph.end()) return nullptr;
  Graph& g = g_graphs.at(it->second);
  for (Node& node : g.nodes) {
    if (node.handle == h(n)) {
      if (graph) *graph = &g;
      return &node;
    }
  }
  return nullptr;
}

void drop_node(Node& n) {
  g_node_graph.erase(n.handle);
  if (n.child) forget(n.child);
}

void forget(uint64_t graph) {
  auto it = g_graphs.find(graph);
  if (it == g_graphs.end()) return;
  Graph g = std::move(it->second);
  g_graphs.erase(it);
  for (Node& n : g.nodes) drop_node(n);
}

// A deep copy of `from` under a new handle (child graphs copied too); `map`
// gets each new node's original.
uint64_t clone_graph(uint64_t from, std::unordered_map<uint64_t, uint64_t>* map) {
  Graph copy;
  std::unordered_map<uint64_t, uint64_t> renamed;
  const uint64_t handle = mint(HandleKind::kGraph);
  for (const Node& n : g_graphs.at(from).nodes) {
    Node c = n;
    c.handle = mint(HandleKind::kGraphNode);
    renamed[n.handle] = c.handle;
    if (map) (*map)[c.handle] = n.handle;
    if (n.child) c.child = clone_graph(n.child, nullptr);
    g_node_graph[c.handle] = handle;
    copy.nodes.push_back(std::move(c));
  }
  for (Node& n : copy.nodes) {
    for (uint64_t& d : n.deps) d = renamed.at(d);
  }
  g_graphs.emplace(handle, std::move(copy));
  return handle;
}

// The graph's nodes in an order that respects every edge, earlier-added
// first among those ready; false for a cycle.
bool order(const Graph& g, std::vector<const Node*>* out) {
  std::unordered_map<uint64_t, size_t> waiting;
  std::unordered_map<uint64_t, std::vector<const Node*>> after;
  for (const Node& n : g.nodes) {
    waiting[n.handle] = n.deps.size();
    for (uint64_t d : n.deps) after[d].push_back(&n);
  }
  std::vector<const Node*> ready;
  for (const Node& n : g.nodes) {
    if (n.deps.empty()) ready.push_back(&n);
  }
  out->clear();
  std::deque<const Node*> queue(ready.begin(), ready.end());
  while (!queue.empty()) {
    const Node* n = queue.front();
    queue.pop_front();
    out->push_back(n);
    for (const Node* next : after[n->handle]) {
      if (--waiting[next->handle] == 0) queue.push_back(next);
    }
  }
  return out->size() == g.nodes.size();
}

// Appends the graph's work to `steps` (child graphs inlined); `step_of`, when
// given, gets the position of each top-level node.
bool flatten(const Graph& g, std::vector<Node>* steps, std::unordered_map<uint64_t, size_t>* step_of) {
  std::vector<const Node*> sorted;
  if (!order(g, &sorted)) return false;
  for (const Node* n : sorted) {
    if (step_of) (*step_of)[n->handle] = steps->size();
    if (n->type == cudaGraphNodeTypeGraph) {
      Node marker;
      marker.type = cudaGraphNodeTypeEmpty;
      steps->push_back(marker);
      if (!flatten(g_graphs.at(n->child), steps, nullptr)) return false;
    } else {
      steps->push_back(*n);
    }
  }
  return true;
}

// Adds `node` to `graph` after `deps`.
cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t count, Node node) {
  if (!out || (count > 0 && !deps)) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(g_mu);
  Graph* g = graph_of(graph);
  if (!g) return is(graph, HandleKind::kGraph) || graph == nullptr ? cudaErrorInvalidValue : cudaErrorNotSupported;
  for (size_t i = 0; i < count; ++i) {
    auto it = g_node_graph.find(h(deps[i]));
    if (it == g_node_graph.end() || it->second != h(graph)) return cudaErrorInvalidValue;
    if (std::find(node.deps.begin(), node.deps.end(), h(deps[i])) != node.deps.end()) return cudaErrorInvalidValue;
    node.deps.push_back(h(deps[i]));
  }
  node.handle = mint(HandleKind::kGraphNode);
  g_node_graph[node.handle] = h(graph);
  *out = reinterpret_cast<cudaGraphNode_t>(node.handle);
  g->nodes.push_back(std::move(node));
  return cudaSuccess;
}

cudaError_t kernel_node(const cudaKernelNodeParams* p, Node* n) {
  if (!p) return cudaErrorInvalidValue;
  if (p->gridDim.x == 0 || p->gridDim.y == 0 || p->gridDim.z == 0 || p->blockDim.x == 0 || p->blockDim.y == 0 ||
      p->blockDim.z == 0) {
    return cudaErrorInvalidConfiguration;
  }
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(p->func, &f); e != cudaSuccess) return e;
  n->type = cudaGraphNodeTypeKernel;
  n->func = p->func;
  n->function = f;
  n->grid = p->gridDim;
  n->block = p->blockDim;
  n->shared = p->sharedMemBytes;
  return to_cuda_error(rgpu::shim::function_params(f, p->kernelParams, p->extra, &n->args, &n->arg_offsets));
}

cudaError_t copy_node(const cudaMemcpy3DParms* p, Node* n) {
  if (!p) return cudaErrorInvalidValue;
  // Arrays are not provided by rgpu's runtime.
  if (p->srcArray || p->dstArray) return cudaErrorNotSupported;
  if (!p->srcPtr.ptr || !p->dstPtr.ptr || p->srcPtr.pitch < p->extent.width + p->srcPos.x ||
      p->dstPtr.pitch < p->extent.width + p->dstPos.x) {
    return cudaErrorInvalidValue;
  }
  if (p->kind < cudaMemcpyHostToHost || p->kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  n->type = cudaGraphNodeTypeMemcpy;
  n->copy = *p;
  return cudaSuccess;
}

cudaMemcpy3DParms linear_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), count, count, 1};
  p.dstPtr = cudaPitchedPtr{dst, count, count, 1};
  p.extent = cudaExtent{count, 1, 1};
  p.kind = kind;
  return p;
}

cudaError_t memset_node(const cudaMemsetParams* p, Node* n) {
  if (!p || !p->dst) return cudaErrorInvalidValue;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return cudaErrorInvalidValue;
  if (p->height > 1 && p->pitch < p->width * p->elementSize) return cudaErrorInvalidValue;
  n->type = cudaGraphNodeTypeMemset;
  n->memset = *p;
  return cudaSuccess;
}

cudaError_t host_node(const cudaHostNodeParams* p, Node* n) {
  if (!p || !p->fn) return cudaErrorInvalidValue;
  n->type = cudaGraphNodeTypeHost;
  n->host = *p;
  return cudaSuccess;
}

// Whether a copy reads this process's memory (known only when it is queued
// for a cudaMemcpyDefault copy: a pointer outside rgpu's allocations).
bool reads_host(const cudaMemcpy3DParms& p) {
  if (p.kind == cudaMemcpyHostToDevice || p.kind == cudaMemcpyHostToHost) return true;
  if (p.kind != cudaMemcpyDefault) return false;
  return !state().find_device_range(reinterpret_cast<CUdeviceptr>(p.srcPtr.ptr), nullptr, nullptr);
}

cudaError_t run_memset(const cudaMemsetParams& p, CUstream s) {
  const size_t row = p.width * p.elementSize;
  const bool whole = p.height <= 1 || p.pitch == row;
  const size_t rows = whole ? 1 : p.height, count = whole ? p.width * std::max<size_t>(p.height, 1) : p.width;
  for (size_t r = 0; r < rows; ++r) {
    const CUdeviceptr at = reinterpret_cast<CUdeviceptr>(p.dst) + r * p.pitch;
    CUresult e = p.elementSize == 1   ? cuMemsetD8Async(at, static_cast<unsigned char>(p.value), count, s)
                 : p.elementSize == 2 ? cuMemsetD16Async(at, static_cast<unsigned short>(p.value), count, s)
                                      : cuMemsetD32Async(at, p.value, count, s);
    if (e != CUDA_SUCCESS) return to_cuda_error(e);
  }
  return cudaSuccess;
}

// Queues the executable graph's work on `s`, in order.
cudaError_t run(const std::vector<Node>& steps, CUstream s) {
  bool host_ran = false;
  for (const Node& n : steps) {
    CUresult r = CUDA_SUCCESS;
    switch (n.type) {
      case cudaGraphNodeTypeKernel: {
        size_t size = n.args.size();
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<unsigned char*>(n.args.data()),
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
        r = cuLaunchKernel(n.function, n.grid.x, n.grid.y, n.grid.z, n.block.x, n.block.y, n.block.z, n.shared, s,
                           nullptr, size > 0 ? extra : nullptr);
        break;
      }
      case cudaGraphNodeTypeMemcpy:
        // A copy from this process's memory reads it as it is queued: after
        // a host function of this launch (which may have written it), only
        // once the stream has reached that point.
        if (host_ran && reads_host(n.copy)) r = cuStreamSynchronize(s);
        if (r == CUDA_SUCCESS) {
          if (cudaError_t e = copy_3d_async(n.copy, s); e != cudaSuccess) return e;
        }
        break;
      case cudaGraphNodeTypeMemset:
        if (cudaError_t e = run_memset(n.memset, s); e != cudaSuccess) return e;
        break;
      case cudaGraphNodeTypeHost:
        r = cuLaunchHostFunc(s, n.host.fn, n.host.userData);
        host_ran = true;
        break;
      case cudaGraphNodeTypeEventRecord:
        r = cuEventRecord(reinterpret_cast<CUevent>(n.event), s);
        break;
      case cudaGraphNodeTypeWaitEvent:
        r = cuStreamWaitEvent(s, reinterpret_cast<CUevent>(n.event), 0);
        break;
      default:  // empty nodes, and the place of an inlined child graph
        break;
    }
    if (r != CUDA_SUCCESS) return to_cuda_error(r);
  }
  return cudaSuccess;
}

// Fills a node list query: `count` in, how many fit; out, how many there are
// (CUDA's rule for cudaGraphGetNodes and its kin).
cudaError_t answer(const std::vector<uint64_t>& all, cudaGraphNode_t* out, size_t* count) {
  if (!count) return cudaErrorInvalidValue;
  if (out) {
    for (size_t i = 0; i < *count; ++i) {
      out[i] = i < all.size() ? reinterpret_cast<cudaGraphNode_t>(all[i]) : nullptr;
    }
  }
  *count = all.size();
  return cudaSuccess;
}

}  // namespace rgpu::runtime::graph_model

namespace rgpu::runtime {

bool is_explicit_graph(cudaGraph_t g) { return is(g, HandleKind::kGraph); }
bool is_explicit_exec(cudaGraphExec_t e) { return is(e, HandleKind::kGraphExec); }

cudaError_t explicit_graph_create(cudaGraph_t* graph) {
  std::lock_guard<std::mutex> lock(g_mu);
  const uint64_t handle = mint(HandleKind::kGraph);
  g_graphs.emplace(handle, Graph{});
  *graph = reinterpret_cast<cudaGraph_t>(handle);
  return cudaSuccess;
}

cudaError_t explicit_graph_destroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!graph_of(graph)) return cudaErrorInvalidValue;
  forget(h(graph));
  return cudaSuccess;
}

cudaError_t explicit_graph_nodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  std::lock_guard<std::mutex> lock(g_mu);
  Graph* g = graph_of(graph);
  if (!g) return cudaErrorInvalidValue;
  std::vector<uint64_t> all;
  for (const Node& n : g->nodes) all.push_back(n.handle);
  return answer(all, nodes, count);
}

cudaError_t explicit_instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec) return cudaErrorInvalidValue;
  // Auto-free on launch and device launch concern graph memory nodes and
  // device-side launches, which these graphs do not hold; upload and
  // priority change nothing here.
  std::lock_guard<std::mutex> lock(g_mu);
  Graph* g = graph_of(graph);
  if (!g) return cudaErrorInvalidValue;
  Exec e;
  e.flags = flags;
  if (!flatten(*g, &e.steps, &e.step_of)) return cudaErrorInvalidValue;  // a cycle
  const uint64_t handle = mint(HandleKind::kGraphExec);
  g_execs.emplace(handle, std::move(e));
  *exec = reinterpret_cast<cudaGraphExec_t>(handle);
  return cudaSuccess;
}

cudaError_t explicit_exec_destroy(cudaGraphExec_t exec) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_execs.erase(h(exec)) == 1 ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t explicit_launch(cudaGraphExec_t exec, CUstream s) {
  std::vector<Node> steps;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto e = g_execs.find(h(exec));
    if (e == g_execs.end()) return cudaErrorInvalidValue;
    steps = e->second.steps;
  }
  return run(steps, s);
}

}  // namespace rgpu::runtime

// ---- adding nodes ---------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t count,
                                                  const cudaKernelNodeParams* params) {
  return entry([&] {
    Node n;
    if (cudaError_t e = kernel_node(params, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t count,
                                                  const cudaMemcpy3DParms* params) {
  return entry([&] {
    Node n;
    if (cudaError_t e = copy_node(params, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* out, cudaGraph_t graph,
                                                    const cudaGraphNode_t* deps, size_t count, void* dst,
                                                    const void* src, size_t bytes, cudaMemcpyKind kind) {
  return entry([&] {
    Node n;
    const cudaMemcpy3DParms p = linear_copy(dst, src, bytes, kind);
    if (cudaError_t e = copy_node(&p, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* out, cudaGraph_t graph,
                                                          const cudaGraphNode_t* deps, size_t count,
                                                          const void* symbol, const void* src, size_t bytes,
                                                          size_t offset, cudaMemcpyKind kind) {
  return entry([&] {
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
      return cudaErrorInvalidMemcpyDirection;
    }
    void* dst = nullptr;
    if (cudaError_t e = symbol_address(symbol, bytes, offset, &dst); e != cudaSuccess) return e;
    Node n;
    const cudaMemcpy3DParms p = linear_copy(dst, src, bytes, kind);
    if (cudaError_t e = copy_node(&p, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* out, cudaGraph_t graph,
                                                            const cudaGraphNode_t* deps, size_t count, void* dst,
                                                            const void* symbol, size_t bytes, size_t offset,
                                                            cudaMemcpyKind kind) {
  return entry([&] {
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
      return cudaErrorInvalidMemcpyDirection;
    }
    void* src = nullptr;
    if (cudaError_t e = symbol_address(symbol, bytes, offset, &src); e != cudaSuccess) return e;
    Node n;
    const cudaMemcpy3DParms p = linear_copy(dst, src, bytes, kind);
    if (cudaError_t e = copy_node(&p, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t count,
                                                  const cudaMemsetParams* params) {
  return entry([&] {
    Node n;
    if (cudaError_t e = memset_node(params, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                size_t count, const cudaHostNodeParams* params) {
  return entry([&] {
    Node n;
    if (cudaError_t e = host_node(params, &n); e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                 const cudaGraphNode_t* deps, size_t count) {
  return entry([&] { return add(out, graph, deps, count, Node{}); });
}

static cudaError_t event_node(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t count,
                              cudaEvent_t event, cudaGraphNodeType type) {
  return entry([&] {
    if (!event) return cudaErrorInvalidResourceHandle;
    Node n;
    n.type = type;
    n.event = event;
    return add(out, graph, deps, count, std::move(n));
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                       const cudaGraphNode_t* deps, size_t count, cudaEvent_t event) {
  return event_node(out, graph, deps, count, event, cudaGraphNodeTypeEventRecord);
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                     const cudaGraphNode_t* deps, size_t count, cudaEvent_t event) {
  return event_node(out, graph, deps, count, event, cudaGraphNodeTypeWaitEvent);
}

// The child is copied, as CUDA copies it. A captured graph (rgpud's) cannot
// be a child yet.
RGPU_RT_EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* out, cudaGraph_t graph,
                                                      const cudaGraphNode_t* deps, size_t count, cudaGraph_t child) {
  return entry([&] {
    if (!is_explicit_graph(child)) return child ? cudaErrorNotSupported : cudaErrorInvalidValue;
    Node n;
    n.type = cudaGraphNodeTypeGraph;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (!graph_of(child) || child == graph) return cudaErrorInvalidValue;
      n.child = clone_graph(h(child), nullptr);
    }
    cudaError_t e = add(out, graph, deps, count, n);
    if (e != cudaSuccess) {
      std::lock_guard<std::mutex> lock(g_mu);
      forget(n.child);
    }
    return e;
  });
}

// Conditional nodes (and the generic form's other kinds) are not provided.
RGPU_RT_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                            const cudaGraphEdgeData* edges, size_t count,
                                            cudaGraphNodeParams* params) {
  return entry([&] {
    if (!params) return cudaErrorInvalidValue;
    for (size_t i = 0; edges && i < count; ++i) {
      if (edges[i].type != cudaGraphDependencyTypeDefault || edges[i].from_port || edges[i].to_port) {
        return cudaErrorNotSupported;
      }
    }
    Node n;
    cudaError_t e = cudaSuccess;
    switch (params->type) {
      case cudaGraphNodeTypeKernel: {
        const cudaKernelNodeParamsV2& k = params->kernel;
        const cudaKernelNodeParams p{k.func, k.gridDim, k.blockDim, k.sharedMemBytes, k.kernelParams, k.extra};
        e = kernel_node(&p, &n);
        break;
      }
      case cudaGraphNodeTypeMemcpy: e = copy_node(&params->memcpy.copyParams, &n); break;
      case cudaGraphNodeTypeMemset: {
        const cudaMemsetParamsV2& m = params->memset;
        const cudaMemsetParams p{m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
        e = memset_node(&p, &n);
        break;
      }
      case cudaGraphNodeTypeHost: {
        const cudaHostNodeParams p{params->host.fn, params->host.userData};
        e = host_node(&p, &n);
        break;
      }
      case cudaGraphNodeTypeEmpty: break;
      case cudaGraphNodeTypeEventRecord:
      case cudaGraphNodeTypeWaitEvent:
        n.type = params->type;
        n.event = params->type == cudaGraphNodeTypeEventRecord ? params->eventRecord.event : params->eventWait.event;
        if (!n.event) e = cudaErrorInvalidResourceHandle;
        break;
      default:
        return refuse("cudaGraphAddNode of this node type (conditional, memory or semaphore nodes)");
    }
    if (e != cudaSuccess) return e;
    return add(out, graph, deps, count, std::move(n));
  });
}

// ---- nodes' parameters ----------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* params) {
  return entry([&] {
    if (!params) return cudaErrorInvalidValue;
    return with_node(node, cudaGraphNodeTypeKernel, [&](Node& n) {
      n.arg_pointers.clear();
      for (size_t off : n.arg_offsets) n.arg_pointers.push_back(n.args.data() + off);
      params->func = const_cast<void*>(n.func);
      params->gridDim = n.grid;
      params->blockDim = n.block;
      params->sharedMemBytes = n.shared;
      params->kernelParams = n.arg_pointers.empty() ? nullptr : n.arg_pointers.data();
      params->extra = nullptr;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = kernel_node(params, &fresh); e != cudaSuccess) return e;
    return with_node(node, cudaGraphNodeTypeKernel, [&](Node& n) {
      fresh.handle = n.handle;
      fresh.deps = n.deps;
      n = std::move(fresh);
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* params) {
  return entry([&] {
    if (!params) return cudaErrorInvalidValue;
    return with_node(node, cudaGraphNodeTypeMemcpy, [&](Node& n) {
      *params = n.copy;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = copy_node(params, &fresh); e != cudaSuccess) return e;
    return with_node(node, cudaGraphNodeTypeMemcpy, [&](Node& n) {
      n.copy = fresh.copy;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                                          size_t bytes, cudaMemcpyKind kind) {
  const cudaMemcpy3DParms p = linear_copy(dst, src, bytes, kind);
  return cudaGraphMemcpyNodeSetParams(node, &p);
}

RGPU_RT_EXPORT cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* params) {
  return entry([&] {
    if (!params) return cudaErrorInvalidValue;
    return with_node(node, cudaGraphNodeTypeMemset, [&](Node& n) {
      *params = n.memset;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = memset_node(params, &fresh); e != cudaSuccess) return e;
    return with_node(node, cudaGraphNodeTypeMemset, [&](Node& n) {
      n.memset = fresh.memset;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* params) {
  return entry([&] {
    if (!params) return cudaErrorInvalidValue;
    return with_node(node, cudaGraphNodeTypeHost, [&](Node& n) {
      *params = n.host;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = host_node(params, &fresh); e != cudaSuccess) return e;
    return with_node(node, cudaGraphNodeTypeHost, [&](Node& n) {
      n.host = fresh.host;
      return cudaSuccess;
    });
  });
}

static cudaError_t event_of(cudaGraphNode_t node, cudaGraphNodeType type, cudaEvent_t* event) {
  return entry([&] {
    if (!event) return cudaErrorInvalidValue;
    return with_node(node, type, [&](Node& n) {
      *event = n.event;
      return cudaSuccess;
    });
  });
}
static cudaError_t set_event(cudaGraphNode_t node, cudaGraphNodeType type, cudaEvent_t event) {
  return entry([&] {
    if (!event) return cudaErrorInvalidResourceHandle;
    return with_node(node, type, [&](Node& n) {
      n.event = event;
      return cudaSuccess;
    });
  });
}
RGPU_RT_EXPORT cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event) {
  return event_of(node, cudaGraphNodeTypeEventRecord, event);
}
RGPU_RT_EXPORT cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return set_event(node, cudaGraphNodeTypeEventRecord, event);
}
RGPU_RT_EXPORT cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event) {
  return event_of(node, cudaGraphNodeTypeWaitEvent, event);
}
RGPU_RT_EXPORT cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return set_event(node, cudaGraphNodeTypeWaitEvent, event);
}

RGPU_RT_EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* graph) {
  return entry([&] {
    if (!graph) return cudaErrorInvalidValue;
    return with_node(node, cudaGraphNodeTypeGraph, [&](Node& n) {
      *graph = reinterpret_cast<cudaGraph_t>(n.child);
      return cudaSuccess;
    });
  });
}
