// Runtime API: stream capture and graphs, on top of the driver API (which
// rgpu remotes: the capture state lives on the server's stream, see
// client-shim/src/graph_api.cpp for the rule on client-side work).
#include "runtime.h"

using namespace rgpu::runtime;

namespace {

cudaError_t is_capturing(cudaStream_t s, bool per_thread, cudaStreamCaptureStatus* status) {
  RT_BEGIN
  return record(capture_info(s, per_thread, status, nullptr, nullptr, nullptr, nullptr, nullptr));
  RT_END
}

bool valid_mode(cudaStreamCaptureMode m) {
  return m == cudaStreamCaptureModeGlobal || m == cudaStreamCaptureModeThreadLocal ||
         m == cudaStreamCaptureModeRelaxed;
}

cudaError_t begin_capture(cudaStream_t s, cudaStreamCaptureMode mode, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (!valid_mode(mode)) return record(cudaErrorInvalidValue);
  return record(cuStreamBeginCapture_v2(driver_stream(s, per_thread), static_cast<CUstreamCaptureMode>(mode)));
  RT_END
}

cudaError_t end_capture(cudaStream_t s, cudaGraph_t* graph, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (!graph) return record(cudaErrorInvalidValue);
  CUgraph g = nullptr;
  CUresult r = cuStreamEndCapture(driver_stream(s, per_thread), &g);
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return record(r);
  RT_END
}

cudaError_t launch(cudaGraphExec_t exec, cudaStream_t s, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_exec(exec)) return record(explicit_launch(exec, driver_stream(s, per_thread)));
  return record(cuGraphLaunch(reinterpret_cast<CUgraphExec>(exec), driver_stream(s, per_thread)));
  RT_END
}

cudaError_t upload(cudaGraphExec_t exec, cudaStream_t s, bool per_thread) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_exec(exec)) return cudaSuccess;  // nothing to place ahead of its launches
  return record(cuGraphUpload(reinterpret_cast<CUgraphExec>(exec), driver_stream(s, per_thread)));
  RT_END
}

}  // namespace

namespace rgpu::runtime {

CUresult capture_info(cudaStream_t s, bool per_thread, cudaStreamCaptureStatus* status, unsigned long long* id,
                      cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                      size_t* count) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (cudaError_t e = ensure_context(); e != cudaSuccess) {
    // No device yet: nothing can be capturing.
    *status = cudaStreamCaptureStatusNone;
    return CUDA_SUCCESS;
  }
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t cid = 0;
  CUgraph g = nullptr;
  const CUgraphNode* d = nullptr;
  const CUgraphEdgeData* ed = nullptr;
  size_t n = 0;
  CUresult r = cuStreamGetCaptureInfo_v3(driver_stream(s, per_thread), &st, &cid, graph ? &g : nullptr,
                                         deps ? &d : nullptr, edges ? &ed : nullptr, count ? &n : nullptr);
  if (r != CUDA_SUCCESS) return r;
  *status = static_cast<cudaStreamCaptureStatus>(st);
  if (st == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_SUCCESS;  // the rest is defined only while capturing
  if (id) *id = cid;
  if (graph) *graph = reinterpret_cast<cudaGraph_t>(g);
  if (deps) *deps = reinterpret_cast<const cudaGraphNode_t*>(d);
  if (edges) *edges = reinterpret_cast<const cudaGraphEdgeData*>(ed);
  if (count) *count = n;
  return CUDA_SUCCESS;
}

cudaError_t capture_status(cudaStream_t s, cudaStreamCaptureStatus* status) {
  return to_cuda_error(capture_info(s, false, status, nullptr, nullptr, nullptr, nullptr, nullptr));
}

}  // namespace rgpu::runtime

RGPU_RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  return is_capturing(s, false, status);
}
RGPU_RT_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  return is_capturing(s, true, status);
}

RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                                    unsigned long long* id, cudaGraph_t* graph,
                                                    const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                                    size_t* count) {
  RT_BEGIN
  return record(capture_info(s, false, status, id, graph, deps, edges, count));
  RT_END
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                                         unsigned long long* id, cudaGraph_t* graph,
                                                         const cudaGraphNode_t** deps,
                                                         const cudaGraphEdgeData** edges, size_t* count) {
  RT_BEGIN
  return record(capture_info(s, true, status, id, graph, deps, edges, count));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  RT_BEGIN
  if (!mode || !valid_mode(*mode)) return record(cudaErrorInvalidValue);
  auto m = static_cast<CUstreamCaptureMode>(*mode);
  CUresult r = cuThreadExchangeStreamCaptureMode(&m);
  *mode = static_cast<cudaStreamCaptureMode>(m);
  return record(r);
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode, true);
}
RGPU_RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  return end_capture(s, graph, false);
}
RGPU_RT_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* graph) {
  return end_capture(s, graph, true);
}

RGPU_RT_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  // Built node by node on this side (graph_nodes.cpp).
  if (!graph || flags != 0) return record(cudaErrorInvalidValue);
  return record(explicit_graph_create(graph));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_graph(graph)) return record(explicit_graph_destroy(graph));
  return record(cuGraphDestroy(reinterpret_cast<CUgraph>(graph)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_graph(graph)) return record(explicit_graph_nodes(graph, nodes, count));
  return record(cuGraphGetNodes(reinterpret_cast<CUgraph>(graph), reinterpret_cast<CUgraphNode*>(nodes), count));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                         unsigned long long flags) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_graph(graph)) return record(explicit_instantiate(exec, graph, flags));
  return record(cuGraphInstantiateWithFlags(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph),
                                            flags));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(exec, graph, flags);
}

RGPU_RT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (is_explicit_exec(exec)) return record(explicit_exec_destroy(exec));
  return record(cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(exec)));
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) { return launch(exec, s, false); }
RGPU_RT_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s) { return launch(exec, s, true); }
RGPU_RT_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t s) { return upload(exec, s, false); }
RGPU_RT_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t s) { return upload(exec, s, true); }
