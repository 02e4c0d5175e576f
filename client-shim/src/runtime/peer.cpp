// Runtime API: peer devices, and IPC, which rgpu refuses: a device's memory
// lives on a server, so a handle to it means nothing to another client
// process.
#include <cstring>
#include <vector>

#include "runtime.h"

using namespace rgpu::runtime;

namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// A copy between two devices: through the driver's peer copy where it has
// one, else staged through the client in stream order (the stream is waited
// for, then the bytes go device to host to device).
cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, size_t n, CUstream s,
                      bool async) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (cudaError_t e = check_device(dst_device); e != cudaSuccess) return record(e);
  if (cudaError_t e = check_device(src_device); e != cudaSuccess) return record(e);
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return record(cudaErrorInvalidValue);
  CUresult r = CUDA_SUCCESS;
  if (dst_device == src_device) {
    r = cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, s);
    if (r == CUDA_SUCCESS && !async) r = cuStreamSynchronize(s);
    return record(r);
  }
  CUcontext dst_ctx = nullptr, src_ctx = nullptr;
  if (cudaError_t e = state().primary(dst_device, &dst_ctx); e != cudaSuccess) return record(e);
  if (cudaError_t e = state().primary(src_device, &src_ctx); e != cudaSuccess) return record(e);
  r = cuMemcpyPeerAsync(dptr(dst), dst_ctx, dptr(src), src_ctx, n, s);
  if (r == CUDA_SUCCESS) return record(async ? r : cuStreamSynchronize(s));
  if (r != CUDA_ERROR_NOT_SUPPORTED) return record(r);
  if ((r = cuStreamSynchronize(s)) != CUDA_SUCCESS) return record(r);
  std::vector<unsigned char> bounce(n);
  CUcontext prev = nullptr;
  cuCtxGetCurrent(&prev);
  r = cuCtxSetCurrent(src_ctx);
  if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(bounce.data(), dptr(src), n);
  if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(dst_ctx);
  if (r == CUDA_SUCCESS) r = cuMemcpyHtoD(dptr(dst), bounce.data(), n);
  cuCtxSetCurrent(prev);
  return record(r);
  RT_END
}

}  // namespace

RGPU_RT_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer) {
  RT_BEGIN
  if (!can_access) return record(cudaErrorInvalidValue);
  if (cudaError_t e = check_device(device); e != cudaSuccess) return record(e);
  if (cudaError_t e = check_device(peer); e != cudaSuccess) return record(e);
  *can_access = 0;
  if (device == peer) return cudaSuccess;  // a device is not its own peer
  // As the driver says; a driver without the query has no peer access.
  int v = 0;
  if (cuDeviceCanAccessPeer(&v, device, peer) == CUDA_SUCCESS) *can_access = v != 0;
  return cudaSuccess;
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  RT_BEGIN
  if (flags != 0) return record(cudaErrorInvalidValue);
  RT_CONTEXT_OR_RETURN();
  if (cudaError_t e = check_device(peer); e != cudaSuccess) return record(e);
  int can = 0;
  if (cudaError_t e = cudaDeviceCanAccessPeer(&can, current_device(), peer); e != cudaSuccess) return e;
  if (!can) return record(peer == current_device() ? cudaErrorInvalidDevice : cudaErrorPeerAccessUnsupported);
  CUcontext peer_ctx = nullptr;
  if (cudaError_t e = state().primary(peer, &peer_ctx); e != cudaSuccess) return record(e);
  CUresult r = cuCtxEnablePeerAccess(peer_ctx, 0);
  if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return record(cudaErrorPeerAccessAlreadyEnabled);
  return record(r);
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  RT_BEGIN
  RT_CONTEXT_OR_RETURN();
  if (cudaError_t e = check_device(peer); e != cudaSuccess) return record(e);
  int can = 0;
  if (cudaError_t e = cudaDeviceCanAccessPeer(&can, current_device(), peer); e != cudaSuccess) return e;
  if (!can) return record(cudaErrorPeerAccessNotEnabled);
  CUcontext peer_ctx = nullptr;
  if (cudaError_t e = state().primary(peer, &peer_ctx); e != cudaSuccess) return record(e);
  CUresult r = cuCtxDisablePeerAccess(peer_ctx);
  if (r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) return record(cudaErrorPeerAccessNotEnabled);
  return record(r);
  RT_END
}

RGPU_RT_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t n) {
  return copy_peer(dst, dst_device, src, src_device, n, nullptr, false);
}
RGPU_RT_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t n,
                                               cudaStream_t s) {
  return copy_peer(dst, dst_device, src, src_device, n, driver_stream(s, false), true);
}

// ---- IPC: refused ---------------------------------------------------------------

RGPU_RT_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void*) {
  if (handle) std::memset(handle, 0, sizeof(*handle));
  return refuse("cudaIpcGetMemHandle");
}
RGPU_RT_EXPORT cudaError_t cudaIpcOpenMemHandle(void** ptr, cudaIpcMemHandle_t, unsigned int) {
  if (ptr) *ptr = nullptr;
  return refuse("cudaIpcOpenMemHandle");
}
RGPU_RT_EXPORT cudaError_t cudaIpcCloseMemHandle(void*) { return refuse("cudaIpcCloseMemHandle"); }
RGPU_RT_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t) {
  if (handle) std::memset(handle, 0, sizeof(*handle));
  return refuse("cudaIpcGetEventHandle");
}
RGPU_RT_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t) {
  if (event) *event = nullptr;
  return refuse("cudaIpcOpenEventHandle");
}
