// Entry points: stream capture, graphs, executable graphs. What is recorded
// and how a replay runs is in graph.h; the rules are in docs/cpu-device.md.
#include <cstdio>
#include <fstream>
#include <map>

#include "api_common.h"

using namespace rgpu::cpudev;


namespace {

uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

CUresult stream_of(CUstream h, Driver** d, std::shared_ptr<Context>* ctx, std::shared_ptr<Stream>* s) {
  std::shared_ptr<Context> current;
  RGPU_CU_TRY(enter(d));
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) RGPU_CU_TRY(enter(d, &current));
  return resolve_stream(*d, current, h, ctx, s);
}

bool valid_mode(CUstreamCaptureMode m) {
  return m == CU_STREAM_CAPTURE_MODE_GLOBAL || m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         m == CU_STREAM_CAPTURE_MODE_RELAXED;
}

// Whether `n` is one of `roots` or an ancestor of one.
bool reaches(const std::vector<GraphNode*>& roots, const GraphNode* n) {
  std::vector<const GraphNode*> todo(roots.begin(), roots.end());
  std::set<const GraphNode*> seen;
  while (!todo.empty()) {
    const GraphNode* x = todo.back();
    todo.pop_back();
    if (x == n) return true;
    if (!seen.insert(x).second) continue;
    todo.insert(todo.end(), x->deps.begin(), x->deps.end());
  }
  return false;
}

CUresult capture_info(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(stream_of(h, &d, &ctx, &s));
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    if (edges && !deps) return CUDA_ERROR_INVALID_VALUE;
    auto c = s->capture();
    if (!c) {
      *status = CU_STREAM_CAPTURE_STATUS_NONE;
      return CUDA_SUCCESS;
    }
    std::lock_guard lock(c->mu);
    *status = c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id) *id = c->id;
    if (graph) *graph = to_handle<CUgraph>(u64(c->graph.get()));
    Capture::Member* m = c->member(s.get());
    if (m && deps) {
      // Kept in the member until its next query, as CUDA keeps its array.
      static_assert(sizeof(CUgraphNode) == sizeof(GraphNode*));
      *deps = reinterpret_cast<const CUgraphNode*>(m->tail.data());
      if (edges) {
        thread_local std::vector<CUgraphEdgeData> zero;
        zero.assign(m->tail.size(), CUgraphEdgeData{});
        *edges = zero.data();
      }
    }
    if (count) *count = m ? m->tail.size() : 0;
    return CUDA_SUCCESS;
  });
}

CUresult add_node(CUgraphNode* out, CUgraph hGraph, const CUgraphNode* deps, size_t ndeps, GraphNode node) {
  Driver* d;
  RGPU_CU_TRY(enter(&d));
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  auto g = d->graphs().graph(u64(hGraph));
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  if (ndeps && !deps) return CUDA_ERROR_INVALID_VALUE;
  std::vector<GraphNode*> after;
  for (size_t i = 0; i < ndeps; ++i) {
    auto* n = reinterpret_cast<GraphNode*>(deps[i]);
    if (!g->owns(n)) return CUDA_ERROR_INVALID_VALUE;
    after.push_back(n);
  }
  GraphNode* added = nullptr;
  RGPU_CU_TRY(g->add(std::move(node), after, &added));
  *out = reinterpret_cast<CUgraphNode>(added);
  return CUDA_SUCCESS;
}

const char* type_name(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event_record";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "wait_event";
    default: return "empty";
  }
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode || !valid_mode(*mode)) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, thread_capture_mode());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(stream_of(h, &d, &ctx, &s));
    if (!valid_mode(mode)) return CUDA_ERROR_INVALID_VALUE;
    // The legacy stream synchronizes with every other: it cannot capture.
    if (s->kind() == Stream::Kind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture()) return CUDA_ERROR_ILLEGAL_STATE;
    auto c = d->graphs().begin_capture(mode, s, ctx->handle());
    d->graphs().add_graph(c->graph);
    s->set_capture(c);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph* phGraph) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(stream_of(h, &d, &ctx, &s));
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    *phGraph = nullptr;
    auto c = s->capture();
    if (!c) return CUDA_ERROR_ILLEGAL_STATE;
    if (c->origin != s) {
      capture_invalidate(c);
      return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id()) {
      return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
    bool invalidated = false;
    bool unjoined = false;
    {
      std::lock_guard lock(c->mu);
      c->ended = true;
      invalidated = c->invalidated;
      const std::vector<GraphNode*>& end = c->member(s.get())->tail;
      for (auto& m : c->members) {
        for (GraphNode* n : m.tail) {
          if (!reaches(end, n)) unjoined = true;
        }
        if (auto ms = m.stream.lock()) ms->set_capture(nullptr);
      }
    }
    d->graphs().end_capture(c.get());
    if (invalidated || unjoined) {
      d->graphs().remove_graph(u64(c->graph.get()));
      return invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    *phGraph = to_handle<CUgraph>(u64(c->graph.get()));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
  return capture_info(h, status, nullptr, nullptr, nullptr, nullptr, nullptr);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                        const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count) {
  return capture_info(h, status, id, graph, deps, edges, count);
}

CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!phGraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    *phGraph = to_handle<CUgraph>(d->graphs().add_graph(std::make_shared<Graph>(ctx->handle())));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    // A graph still being captured into belongs to its capture.
    for (auto& c : d->graphs().active()) {
      if (u64(c->graph.get()) == u64(hGraph)) return CUDA_ERROR_ILLEGAL_STATE;
    }
    return d->graphs().remove_graph(u64(hGraph)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult CUDAAPI cuGraphClone(CUgraph* phClone, CUgraph hOriginal) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!phClone) return CUDA_ERROR_INVALID_VALUE;
    auto g = d->graphs().graph(u64(hOriginal));
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    *phClone = to_handle<CUgraph>(d->graphs().add_graph(g->clone()));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n) {
  return guarded([&] { return add_node(out, g, deps, n, GraphNode{}); });
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                    const CUDA_HOST_NODE_PARAMS* params) {
  return guarded([&] {
    if (!params || !params->fn) return CUDA_ERROR_INVALID_VALUE;
    GraphNode node;
    node.type = CU_GRAPH_NODE_TYPE_HOST;
    node.kind = OpKind::kHost;
    node.work = [fn = params->fn, user = params->userData] {
      fn(user);
      return CUDA_SUCCESS;
    };
    return add_node(out, g, deps, n, std::move(node));
  });
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                           CUevent event) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    GraphNode node;
    node.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    node.event = d->event(to_u64(event));
    if (!node.event) return CUDA_ERROR_INVALID_VALUE;
    return add_node(out, g, deps, n, std::move(node));
  });
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                         CUevent event) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    GraphNode node;
    node.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    node.event = d->event(to_u64(event));
    if (!node.event) return CUDA_ERROR_INVALID_VALUE;
    return add_node(out, g, deps, n, std::move(node));
  });
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    GraphNode* n = d->graphs().node(u64(hNode));
    if (!n || !type) return CUDA_ERROR_INVALID_VALUE;
    *type = n->type;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto g = d->graphs().graph(u64(hGraph));
    if (!g || !numNodes) return CUDA_ERROR_INVALID_VALUE;
    auto all = g->nodes();
    if (!nodes) {
      *numNodes = all.size();
      return CUDA_SUCCESS;
    }
    size_t i = 0;
    for (; i < *numNodes; ++i) nodes[i] = i < all.size() ? reinterpret_cast<CUgraphNode>(all[i]) : nullptr;
    *numNodes = std::min(*numNodes, all.size());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto g = d->graphs().graph(u64(hGraph));
    if (!g || !numNodes) return CUDA_ERROR_INVALID_VALUE;
    std::vector<GraphNode*> roots;
    for (GraphNode* n : g->nodes()) {
      if (n->deps.empty()) roots.push_back(n);
    }
    if (!nodes) {
      *numNodes = roots.size();
      return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < *numNodes; ++i) nodes[i] = i < roots.size() ? reinterpret_cast<CUgraphNode>(roots[i]) : nullptr;
    *numNodes = std::min(*numNodes, roots.size());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto g = d->graphs().graph(u64(hGraph));
    if (!g || !path) return CUDA_ERROR_INVALID_VALUE;
    std::ofstream out(path);
    if (!out) return CUDA_ERROR_OPERATING_SYSTEM;
    std::map<const GraphNode*, size_t> index;
    out << "digraph rgpu_graph {\n";
    for (GraphNode* n : g->nodes()) {
      size_t i = index.size();
      index[n] = i;
      out << "  n" << i << " [label=\"" << i << " " << type_name(n->type) << "\"];\n";
    }
    for (auto& [from, to] : g->edges()) out << "  n" << index[from] << " -> n" << index[to] << ";\n";
    out << "}\n";
    return out ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
  });
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!phGraphExec) return CUDA_ERROR_INVALID_VALUE;
    constexpr unsigned long long kKnown = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                          CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                          CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
    auto g = d->graphs().graph(u64(hGraph));
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    auto e = std::make_shared<GraphExec>(g->context(), g->user_objects());
    // Insertion order is topological: a replay runs the nodes in it.
    for (GraphNode* n : g->nodes()) {
      GraphNode step = *n;
      step.deps.clear();
      e->steps.push_back(std::move(step));
    }
    *phGraphExec = to_handle<CUgraphExec>(d->graphs().add_exec(std::move(e)));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuGraphInstantiateWithFlags(phGraphExec, hGraph, params->flags & ~CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
  params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  params->hErrNode_out = nullptr;
  return r;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    return d->graphs().remove_exec(u64(hGraphExec)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream h) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(stream_of(h, &d, &ctx, &s));
    // Nothing to place ahead of time: host memory is the device's memory.
    return d->graphs().exec(u64(hGraphExec)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream h) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<Stream> s;
    RGPU_CU_TRY(stream_of(h, &d, &ctx, &s));
    auto e = d->graphs().exec(u64(hGraphExec));
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    if (e->context != ctx->handle()) return CUDA_ERROR_INVALID_CONTEXT;
    // The steps in topological order on one in-order stream: every edge holds.
    for (const GraphNode& step : e->steps) {
      switch (step.type) {
        case CU_GRAPH_NODE_TYPE_EMPTY:
          break;
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
          RGPU_CU_TRY(cuEventRecord(to_handle<CUevent>(step.event->handle()), h));
          break;
        case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
          RGPU_CU_TRY(cuStreamWaitEvent(h, to_handle<CUevent>(step.event->handle()), 0));
          break;
        default:
          if (!step.work) break;
          // Each step keeps the executable graph (and the user objects it
          // holds) alive until it ran, even if it is destroyed meanwhile.
          auto run = [e, work = &step.work] { return (*work)(); };
          if (!ctx->enqueue(s, {}, run, step.kind, step.type)) return capture_refusal();
      }
    }
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuUserObjectCreate(CUuserObject* out, void* ptr, CUhostFn destroy, unsigned int initialRefcount,
                                    unsigned int flags) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!out || !destroy || initialRefcount == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    auto o = std::make_shared<UserObject>(&d->graphs(), ptr, destroy, initialRefcount);
    *out = to_handle<CUuserObject>(d->graphs().add_user_object(std::move(o)));
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuUserObjectRetain(CUuserObject object, unsigned int count) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto o = d->graphs().user_object(u64(object));
    if (!o || count == 0) return CUDA_ERROR_INVALID_VALUE;
    o->retain(count);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuUserObjectRelease(CUuserObject object, unsigned int count) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto o = d->graphs().user_object(u64(object));
    if (!o || count == 0) return CUDA_ERROR_INVALID_VALUE;
    o->release(count);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto g = d->graphs().graph(u64(graph));
    auto o = d->graphs().user_object(u64(object));
    if (!g || !o || count == 0 || (flags & ~static_cast<unsigned>(CU_GRAPH_USER_OBJECT_MOVE))) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // MOVE hands over the caller's references; otherwise the graph takes new ones.
    if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->retain(count);
    g->user_objects().add(o, count);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto g = d->graphs().graph(u64(graph));
    auto o = d->graphs().user_object(u64(object));
    if (!g || !o || count == 0) return CUDA_ERROR_INVALID_VALUE;
    return g->user_objects().drop(o, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

}  // extern "C"
