// Runtime API: the structure of graphs built node by node (their nodes,
// roots, edges, removal, cloning, Graphviz output) and the executable graphs
// made from them (parameters changed in place, flags, update from a graph).
// The model and what the other calls do are in graph_model.h and
// graph_nodes.cpp.
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

// ---- structure ------------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  return entry([&] {
    if (!type) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(g_mu);
    Node* n = node_of(node);
    if (!n) return cudaErrorInvalidValue;
    *type = n->type;
    return cudaSuccess;
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  return entry([&] {
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = graph_of(graph);
    if (!g) return is_explicit_graph(graph) || !graph ? cudaErrorInvalidValue : cudaErrorNotSupported;
    std::vector<uint64_t> roots;
    for (const Node& n : g->nodes) {
      if (n.deps.empty()) roots.push_back(n.handle);
    }
    return answer(roots, nodes, count);
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                             cudaGraphEdgeData* edges, size_t* count) {
  return entry([&] {
    if (!count || (!from) != (!to)) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = graph_of(graph);
    if (!g) return is_explicit_graph(graph) || !graph ? cudaErrorInvalidValue : cudaErrorNotSupported;
    std::vector<uint64_t> a, b;
    for (const Node& n : g->nodes) {
      for (uint64_t d : n.deps) {
        a.push_back(d);
        b.push_back(n.handle);
      }
    }
    if (from) {
      for (size_t i = 0; i < *count; ++i) {
        from[i] = i < a.size() ? reinterpret_cast<cudaGraphNode_t>(a[i]) : nullptr;
        to[i] = i < b.size() ? reinterpret_cast<cudaGraphNode_t>(b[i]) : nullptr;
        if (edges) edges[i] = cudaGraphEdgeData{};
      }
    }
    *count = a.size();
    return cudaSuccess;
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                        cudaGraphEdgeData* edges, size_t* count) {
  return entry([&] {
    std::lock_guard<std::mutex> lock(g_mu);
    Node* n = node_of(node);
    if (!n) return cudaErrorInvalidValue;
    if (edges && count && deps) std::fill(edges, edges + *count, cudaGraphEdgeData{});
    return answer(n->deps, deps, count);
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* dependents,
                                                          cudaGraphEdgeData* edges, size_t* count) {
  return entry([&] {
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = nullptr;
    if (!node_of(node, &g)) return cudaErrorInvalidValue;
    std::vector<uint64_t> after;
    for (const Node& n : g->nodes) {
      if (std::find(n.deps.begin(), n.deps.end(), h(node)) != n.deps.end()) after.push_back(n.handle);
    }
    if (edges && count && dependents) std::fill(edges, edges + *count, cudaGraphEdgeData{});
    return answer(after, dependents, count);
  });
}

static cudaError_t edit_edges(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                              const cudaGraphEdgeData* edges, size_t count, bool adding) {
  return entry([&] {
    if (count > 0 && (!from || !to)) return cudaErrorInvalidValue;
    for (size_t i = 0; edges && i < count; ++i) {
      if (edges[i].type != cudaGraphDependencyTypeDefault || edges[i].from_port || edges[i].to_port) {
        return cudaErrorNotSupported;
      }
    }
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = graph_of(graph);
    if (!g) return cudaErrorInvalidValue;
    // All checked before any is applied.
    for (size_t i = 0; i < count; ++i) {
      Graph* gf = nullptr;
      Graph* gt = nullptr;
      Node* a = node_of(from[i], &gf);
      Node* b = node_of(to[i], &gt);
      if (!a || !b || gf != g || gt != g || a == b) return cudaErrorInvalidValue;
      const bool present = std::find(b->deps.begin(), b->deps.end(), a->handle) != b->deps.end();
      if (present == adding) return cudaErrorInvalidValue;
    }
    for (size_t i = 0; i < count; ++i) {
      Node* b = node_of(to[i]);
      if (adding) {
        b->deps.push_back(h(from[i]));
      } else {
        b->deps.erase(std::find(b->deps.begin(), b->deps.end(), h(from[i])));
      }
    }
    return cudaSuccess;
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                    const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                                    size_t count) {
  return edit_edges(graph, from, to, edges, count, true);
}

RGPU_RT_EXPORT cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                       const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                                       size_t count) {
  return edit_edges(graph, from, to, edges, count, false);
}

RGPU_RT_EXPORT cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  return entry([&] {
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = nullptr;
    Node* n = node_of(node, &g);
    if (!n) return cudaErrorInvalidValue;
    for (Node& other : g->nodes) {
      auto& d = other.deps;
      d.erase(std::remove(d.begin(), d.end(), h(node)), d.end());
    }
    auto it = std::find_if(g->nodes.begin(), g->nodes.end(), [&](const Node& x) { return x.handle == h(node); });
    Node gone = std::move(*it);
    g->nodes.erase(it);
    drop_node(gone);
    return cudaSuccess;
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  return entry([&] {
    if (!clone) return cudaErrorInvalidValue;
    // A captured graph lives on the server, which clones it.
    if (original && !is_explicit_graph(original)) {
      return to_cuda_error(cuGraphClone(reinterpret_cast<CUgraph*>(clone), reinterpret_cast<CUgraph>(original)));
    }
    std::lock_guard<std::mutex> lock(g_mu);
    if (!graph_of(original)) return cudaErrorInvalidValue;
    std::unordered_map<uint64_t, uint64_t> map;
    const uint64_t handle = clone_graph(h(original), &map);
    g_graphs.at(handle).cloned_from = std::move(map);
    *clone = reinterpret_cast<cudaGraph_t>(handle);
    return cudaSuccess;
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* node, cudaGraphNode_t original,
                                                    cudaGraph_t clone) {
  return entry([&] {
    if (!node) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(g_mu);
    Graph* g = graph_of(clone);
    if (!g) return cudaErrorInvalidValue;
    for (const auto& [copy, from] : g->cloned_from) {
      if (from == h(original) && g_node_graph.count(copy)) {
        *node = reinterpret_cast<cudaGraphNode_t>(copy);
        return cudaSuccess;
      }
    }
    return cudaErrorInvalidValue;
  });
}

// Nodes, their kinds and the kernels' names, and the edges, in Graphviz's
// language.
RGPU_RT_EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int) {
  return entry([&] {
    if (!path) return cudaErrorInvalidValue;
    std::string dot = "digraph rgpu_graph {\n";
    {
      std::lock_guard<std::mutex> lock(g_mu);
      Graph* g = graph_of(graph);
      if (!g) return is_explicit_graph(graph) || !graph ? cudaErrorInvalidValue : cudaErrorNotSupported;
      static const char* const kNames[] = {"kernel",     "memcpy", "memset",      "host",        "graph",
                                           "empty",      "wait_event", "event_record", "semaphore_signal",
                                           "semaphore_wait", "mem_alloc", "mem_free", "conditional"};
      for (const Node& n : g->nodes) {
        const auto t = static_cast<size_t>(n.type);
        std::string label = t < sizeof kNames / sizeof kNames[0] ? kNames[t] : "node";
        const char* name = nullptr;
        if (n.type == cudaGraphNodeTypeKernel && cuFuncGetName(&name, n.function) == CUDA_SUCCESS && name) {
          label += std::string("\\n") + name;
        }
        dot += "  n" + std::to_string(rgpu::protocol::serial_of(n.handle)) + " [label=\"" + label + "\"];\n";
      }
      for (const Node& n : g->nodes) {
        for (uint64_t d : n.deps) {
          dot += "  n" + std::to_string(rgpu::protocol::serial_of(d)) + " -> n" +
                 std::to_string(rgpu::protocol::serial_of(n.handle)) + ";\n";
        }
      }
    }
    dot += "}\n";
    FILE* f = std::fopen(path, "w");
    if (!f) return cudaErrorOperatingSystem;
    const bool ok = std::fwrite(dot.data(), 1, dot.size(), f) == dot.size();
    return std::fclose(f) == 0 && ok ? cudaSuccess : cudaErrorOperatingSystem;
  });
}

// ---- executable graphs ----------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                            const cudaKernelNodeParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = kernel_node(params, &fresh); e != cudaSuccess) return e;
    return with_step(exec, node, cudaGraphNodeTypeKernel, [&](Node& n) {
      fresh.handle = n.handle;
      fresh.deps = n.deps;
      n = std::move(fresh);
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                            const cudaMemcpy3DParms* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = copy_node(params, &fresh); e != cudaSuccess) return e;
    return with_step(exec, node, cudaGraphNodeTypeMemcpy, [&](Node& n) {
      n.copy = fresh.copy;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void* dst,
                                                              const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaMemcpy3DParms p = linear_copy(dst, src, bytes, kind);
  return cudaGraphExecMemcpyNodeSetParams(exec, node, &p);
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                            const cudaMemsetParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = memset_node(params, &fresh); e != cudaSuccess) return e;
    return with_step(exec, node, cudaGraphNodeTypeMemset, [&](Node& n) {
      n.memset = fresh.memset;
      return cudaSuccess;
    });
  });
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                          const cudaHostNodeParams* params) {
  return entry([&] {
    Node fresh;
    if (cudaError_t e = host_node(params, &fresh); e != cudaSuccess) return e;
    return with_step(exec, node, cudaGraphNodeTypeHost, [&](Node& n) {
      n.host = fresh.host;
      return cudaSuccess;
    });
  });
}

static cudaError_t exec_set_event(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event,
                                  cudaGraphNodeType type) {
  return entry([&] {
    if (!event) return cudaErrorInvalidResourceHandle;
    return with_step(exec, node, type, [&](Node& n) {
      n.event = event;
      return cudaSuccess;
    });
  });
}
RGPU_RT_EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                                cudaEvent_t event) {
  return exec_set_event(exec, node, event, cudaGraphNodeTypeEventRecord);
}
RGPU_RT_EXPORT cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                              cudaEvent_t event) {
  return exec_set_event(exec, node, event, cudaGraphNodeTypeWaitEvent);
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  return entry([&] {
    if (!flags) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(g_mu);
    auto e = g_execs.find(h(exec));
    if (e == g_execs.end()) return is_explicit_exec(exec) || !exec ? cudaErrorInvalidValue : cudaErrorNotSupported;
    *flags = e->second.flags;
    return cudaSuccess;
  });
}

// The graph's parameters into the executable graph, when both have the same
// shape (paired in the order their nodes are queued: the same kinds, as
// many edges each); otherwise the executable graph is left as it was and the result
// says why.
RGPU_RT_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                               cudaGraphExecUpdateResultInfo* info) {
  return entry([&] {
    auto result = [&](cudaGraphExecUpdateResult r, uint64_t node, uint64_t from) {
      if (info) {
        info->result = r;
        info->errorNode = reinterpret_cast<cudaGraphNode_t>(node);
        info->errorFromNode = reinterpret_cast<cudaGraphNode_t>(from);
      }
      return r == cudaGraphExecUpdateSuccess ? cudaSuccess : cudaErrorGraphExecUpdateFailure;
    };
    std::lock_guard<std::mutex> lock(g_mu);
    auto e = g_execs.find(h(exec));
    Graph* g = graph_of(graph);
    if (e == g_execs.end() || !g) return cudaErrorInvalidValue;
    Exec& x = e->second;
    if (x.step_of.size() != g->nodes.size()) return result(cudaGraphExecUpdateErrorTopologyChanged, 0, 0);
    // Both in the order their nodes are queued, compared step by step.
    std::vector<Node> steps;
    if (!flatten(*g, &steps, nullptr) || steps.size() != x.steps.size()) {
      return result(cudaGraphExecUpdateErrorTopologyChanged, 0, 0);
    }
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].type != x.steps[i].type) return result(cudaGraphExecUpdateErrorNodeTypeChanged, steps[i].handle, 0);
      if (steps[i].deps.size() != x.steps[i].deps.size()) {
        return result(cudaGraphExecUpdateErrorTopologyChanged, steps[i].handle, 0);
      }
    }
    // The executable graph's nodes keep the names of the graph it was made
    // from (its per-node setters take those).
    for (size_t i = 0; i < steps.size(); ++i) {
      const uint64_t keep = x.steps[i].handle;
      x.steps[i] = std::move(steps[i]);
      x.steps[i].handle = keep;
    }
    return result(cudaGraphExecUpdateSuccess, 0, 0);
  });
}
