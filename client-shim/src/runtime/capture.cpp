// Runtime API: stream capture as far as rgpu provides it. Graphs are not
// remoted yet, so no stream is ever capturing: the queries answer "none",
// the calling thread's capture mode is kept for the exchange, and beginning
// or ending a capture is refused with cudaErrorNotSupported.
#include "runtime.h"

using namespace rgpu::runtime;

namespace {

thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t is_capturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  RT_BEGIN
  return record(capture_status(s, status));
  RT_END
}

cudaError_t capture_info(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                         cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                         size_t* count) {
  RT_BEGIN
  if (cudaError_t e = capture_status(s, status); e != cudaSuccess) return record(e);
  // The rest is defined only while capturing; cleared so that nothing stale is read.
  (void)id;
  if (graph) *graph = nullptr;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (count) *count = 0;
  return cudaSuccess;
  RT_END
}

}  // namespace

namespace rgpu::runtime {

cudaError_t capture_status(cudaStream_t, cudaStreamCaptureStatus* status) {
  if (!status) return cudaErrorInvalidValue;
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

}  // namespace rgpu::runtime

RGPU_RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  return is_capturing(s, status);
}
RGPU_RT_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
  return is_capturing(s, status);
}

RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                                    unsigned long long* id, cudaGraph_t* graph,
                                                    const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                                    size_t* count) {
  return capture_info(s, status, id, graph, deps, edges, count);
}
RGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* status,
                                                         unsigned long long* id, cudaGraph_t* graph,
                                                         const cudaGraphNode_t** deps,
                                                         const cudaGraphEdgeData** edges, size_t* count) {
  return capture_info(s, status, id, graph, deps, edges, count);
}

RGPU_RT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  RT_BEGIN
  if (!mode) return record(cudaErrorInvalidValue);
  switch (*mode) {
    case cudaStreamCaptureModeGlobal:
    case cudaStreamCaptureModeThreadLocal:
    case cudaStreamCaptureModeRelaxed:
      break;
    default:
      return record(cudaErrorInvalidValue);
  }
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t, enum cudaStreamCaptureMode) {
  return refuse("cudaStreamBeginCapture");
}
RGPU_RT_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t, enum cudaStreamCaptureMode) {
  return refuse("cudaStreamBeginCapture_ptsz");
}
RGPU_RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* graph) {
  if (graph) *graph = nullptr;
  return refuse("cudaStreamEndCapture");
}
RGPU_RT_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t, cudaGraph_t* graph) {
  if (graph) *graph = nullptr;
  return refuse("cudaStreamEndCapture_ptsz");
}
