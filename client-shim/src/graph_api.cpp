// Driver API entry points of stream capture, graphs and virtual memory
// management: each one round trip (Call.graph, protocol/graph_ops.h). The
// server runs the driver's own calls; graph, executable graph and chunk
// handles and reserved addresses are the server's values.
//
// Client-side work in a capture (docs/compatibility.md): capture state lives
// on the server's stream. An async copy between this process's host memory
// and the device, or a host function, on a capturing stream becomes a host
// step of the graph (GraphOp::kCaptureHostStep): at each replay the server
// asks this process to run the function, or to give or take the copy's
// bytes, when the graph reaches it, so the graph reads and writes host
// memory when it runs, as on a GPU. While this process has a capture in
// progress such work asks first (capture_host_step: one round trip);
// otherwise it asks nothing.
#include <cuda.h>

#include <atomic>
#include <thread>
#include <vector>

#include "api_common.h"
#include "rgpu/protocol/graph_ops.h"

using rgpu::protocol::GraphOp;
using rgpu::shim::Shim;
using rgpu::shim::SyncResult;
namespace wire = rgpu::wire;

namespace {

// One Call.graph round trip in the current context.
SyncResult graph_call(Shim* shim, uint64_t ctx, GraphOp op, std::initializer_list<uint64_t> args) {
  return shim->client().graph_call(ctx, op, args);
}

uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

#define GRAPH_CALL(op, ...)                                \
  API_BEGIN                                                \
  SHIM_OR_RETURN(shim);                                    \
  CONTEXT_OR_RETURN(shim, ctx);                            \
  return graph_call(shim, ctx, op, {__VA_ARGS__}).result;  \
  API_END

CUresult capture_info(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                      CUgraph* graph, const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  if (!status || (edges && !deps)) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kCaptureInfo, {s});
  if (r.result != CUDA_SUCCESS) return r.result;
  if (r.values.size() < 4) return CUDA_ERROR_UNKNOWN;
  *status = static_cast<CUstreamCaptureStatus>(r.values[0]);
  if (*status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_SUCCESS;
  if (id) *id = r.values[1];
  if (graph) *graph = reinterpret_cast<CUgraph>(r.values[2]);
  size_t n = r.values.size() - 4 < r.values[3] ? r.values.size() - 4 : r.values[3];
  // Kept until the thread's next query, as the driver keeps its array.
  thread_local std::vector<CUgraphNode> nodes;
  thread_local std::vector<CUgraphEdgeData> edge_data;
  nodes.clear();
  for (size_t i = 0; i < n; ++i) nodes.push_back(reinterpret_cast<CUgraphNode>(r.values[4 + i]));
  edge_data.assign(n, CUgraphEdgeData{});
  if (deps) *deps = nodes.data();
  if (edges) *edges = edge_data.data();
  if (count) *count = n;
  return CUDA_SUCCESS;
  API_END
}

thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// Captures this process began and has not ended: while there are none, no
// stream can be capturing and work with client-side effects asks nothing.
std::atomic<int> g_captures{0};

}  // namespace

namespace rgpu::shim {

CUresult capture_host_step(Client& client, uint64_t ctx, uint64_t stream, protocol::HostStepKind kind, CUhostFn fn,
                           void* data, void* host, uint64_t device, size_t size, bool* recorded) {
  *recorded = false;
  if (g_captures.load() <= 0) return CUDA_SUCCESS;
  return client.capture_host_step(ctx, stream, kind, fn, data, host, device, size, recorded);
}

}  // namespace rgpu::shim

// ---- stream capture --------------------------------------------------------------

// The thread's mode is kept here. rgpud begins every capture relaxed (its
// calls run on threads of its own), so the unsafe-call rules of the global
// and thread-local modes are not enforced through rgpu; the stream rules are.
RGPU_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::swap(*mode, t_mode);
  return CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream stream, CUstreamCaptureMode mode) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  CUresult r = graph_call(shim, ctx, GraphOp::kBeginCapture, {s, static_cast<uint64_t>(mode)}).result;
  if (r == CUDA_SUCCESS) g_captures.fetch_add(1);
  return r;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return begin_capture(stream, mode);
}

static CUresult end_capture(CUstream stream, CUgraph* graph) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  *graph = nullptr;
  SyncResult r = graph_call(shim, ctx, GraphOp::kEndCapture, {s});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *graph = reinterpret_cast<CUgraph>(r.values[0]);
  // These end the capture; the others (not capturing, wrong stream or thread) do not.
  if (r.result == CUDA_SUCCESS || r.result == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
      r.result == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
    if (g_captures.fetch_sub(1) <= 0) g_captures.store(0);
  }
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return end_capture(stream, graph);
}

RGPU_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return capture_info(stream, status, nullptr, nullptr, nullptr, nullptr, nullptr);
}
RGPU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus* status,
                                                       cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                                                       size_t* count) {
  return capture_info(stream, status, id, graph, deps, nullptr, count);
}
RGPU_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status,
                                                       cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                                                       const CUgraphEdgeData** edges, size_t* count) {
  return capture_info(stream, status, id, graph, deps, edges, count);
}

// ---- graphs ----------------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph* graph, unsigned int flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!graph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kGraphCreate, {});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *graph = reinterpret_cast<CUgraph>(r.values[0]);
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph graph) { GRAPH_CALL(GraphOp::kGraphDestroy, u64(graph)) }

RGPU_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph* clone, CUgraph original) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!clone) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kGraphClone, {u64(original)});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *clone = reinterpret_cast<CUgraph>(r.values[0]);
  return r.result;
  API_END
}

// Only the count travels: node handles cannot be used through rgpu yet.
RGPU_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (nodes) return CUDA_ERROR_NOT_SUPPORTED;
  SyncResult r = graph_call(shim, ctx, GraphOp::kGraphNodeCount, {u64(graph)});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *count = r.values[0];
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kInstantiate, {u64(graph), flags});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *exec = reinterpret_cast<CUgraphExec>(r.values[0]);
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) { GRAPH_CALL(GraphOp::kExecDestroy, u64(exec)) }

static CUresult launch(GraphOp op, CUgraphExec exec, CUstream stream) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  STREAM_OR_RETURN(shim, stream, s);
  if (op == GraphOp::kLaunch) shim->client().settle_copy_outs_for_host_steps();
  return graph_call(shim, ctx, op, {u64(exec), s}).result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return launch(GraphOp::kLaunch, exec, stream);
}
RGPU_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec exec, CUstream stream) {
  return launch(GraphOp::kUpload, exec, stream);
}

// ---- virtual memory management ------------------------------------------------

static bool device_prop(Shim* shim, const CUmemAllocationProp* prop, CUdevice* server_device) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return false;
  }
  if (!shim->device(prop->location.id)) return false;
  *server_device = shim->server_ordinal(prop->location.id);
  return true;
}

RGPU_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                           CUmemAllocationGranularity_flags option) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  CUdevice dev;
  if (!granularity || !device_prop(shim, prop, &dev)) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kMemGranularity, {static_cast<uint64_t>(dev), static_cast<uint64_t>(option)});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *granularity = r.values[0];
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                         const CUmemAllocationProp* prop, unsigned long long flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  CUdevice dev;
  if (!handle || flags != 0 || !device_prop(shim, prop, &dev)) return CUDA_ERROR_INVALID_VALUE;
  // Shareable handles (file descriptors, fabric) cannot cross the network:
  // a request for one is accepted (PyTorch makes it) but never honoured;
  // exporting the chunk is not supported.
  SyncResult r = graph_call(shim, ctx, GraphOp::kMemCreate, {static_cast<uint64_t>(dev), size});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *handle = r.values[0];
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  GRAPH_CALL(GraphOp::kMemRelease, handle)
}

RGPU_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                 unsigned long long flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!ptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kAddressReserve, {size, alignment, addr});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *ptr = r.values[0];
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  GRAPH_CALL(GraphOp::kAddressFree, ptr, size)
}

RGPU_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                      unsigned long long flags) {
  if (offset != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  GRAPH_CALL(GraphOp::kMemMap, ptr, size, handle)
}

RGPU_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) { GRAPH_CALL(GraphOp::kMemUnmap, ptr, size) }

RGPU_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  // One round trip per device named (a program names one or a few).
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !shim->device(desc[i].location.id)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t dev = static_cast<uint64_t>(shim->server_ordinal(desc[i].location.id));
    SyncResult r = graph_call(shim, ctx, GraphOp::kMemSetAccess, {ptr, size, dev, static_cast<uint64_t>(desc[i].flags)});
    if (r.result != CUDA_SUCCESS) return r.result;
  }
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kMemRetain, {u64(addr)});
  if (r.result == CUDA_SUCCESS && r.values.size() == 1) *handle = r.values[0];
  return r.result;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                                    CUmemGenericAllocationHandle handle) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  SyncResult r = graph_call(shim, ctx, GraphOp::kMemProperties, {handle});
  if (r.result != CUDA_SUCCESS) return r.result;
  if (r.values.size() != 1) return CUDA_ERROR_UNKNOWN;
  *prop = CUmemAllocationProp{};
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  // The program's ordinal of the server's device.
  for (int i = 0; shim->device(i); ++i) {
    if (static_cast<uint64_t>(shim->server_ordinal(i)) == r.values[0]) {
      prop->location.id = i;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
  API_END
}
