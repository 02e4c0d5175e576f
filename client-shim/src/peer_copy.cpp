// Peer access and copies between devices: rgpu gives no device access to
// another's memory (cuDeviceCanAccessPeer is 0), and copies between two
// servers' devices are staged through the client in pipelined pieces.
#include "peer_copy.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "rgpu/common/log.h"
#include "api_common.h"

namespace rgpu::shim {
namespace {

namespace wire = ::rgpu::wire;

CUresult read_piece(const Route& from, uint64_t src, std::byte* out, uint64_t n) {
  return from.client
      ->call_sync(
          from.ctx,
          [&](wire::Call::Builder c) {
            auto d = c.initMemcpyDtoH();
            d.setSrc(src);
            d.setSize(n);
            d.setStream(protocol::kNullStream);
          },
          {}, OutBuffer{out, n})
      .result;
}

// Writes a piece on the destination's legacy stream: async pieces return
// once their bytes are sent; the last one is a sync call, whose reply comes
// after every piece before it ran (and reports an error of any of them).
CUresult write_piece(const Route& to, uint64_t dst, const std::byte* in, uint64_t n, bool last) {
  auto fill = [&](wire::Call::Builder c) {
    auto h = c.initMemcpyHtoD();
    h.setDst(dst);
    h.setSize(n);
    h.setStream(protocol::kNullStream);
    h.setAsync(!last);
    if (n <= Client::kInlineLimit) h.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(in), n));
  };
  transport::Bytes payload;
  if (n > Client::kInlineLimit) payload = transport::Bytes(in, n);
  if (last) return to.client->call_sync(to.ctx, fill, payload).result;
  if (!payload.empty()) return to.client->call_async_bulk(to.ctx, fill, payload);
  to.client->call_async(to.ctx, fill);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult copy_between_servers(Shim& shim, const Route& to, uint64_t dst, const Route& from, uint64_t src,
                              uint64_t size, uint64_t stream, bool async) {
  (void)async;
  if (size == 0) return CUDA_SUCCESS;
  // In stream order: what the stream holds, and whatever else may still
  // write the source on its server, is done before a byte is read.
  const Route on = shim.route_handle(stream, current_context());
  CUresult r = on.client->call_sync(on.ctx, [&](wire::Call::Builder c) { c.initStreamSynchronize().setHandle(stream); })
                   .result;
  if (r == CUDA_SUCCESS) r = from.client->call_sync(from.ctx, [](wire::Call::Builder c) { c.setCtxSynchronize(); }).result;
  if (r != CUDA_SUCCESS) return r;

  constexpr size_t kRing = 3;
  const uint64_t pieces = (size + kStagePiece - 1) / kStagePiece;
  auto piece_size = [&](uint64_t i) { return i + 1 == pieces ? size - i * kStagePiece : kStagePiece; };
  if (pieces == 1) {
    std::vector<std::byte> buffer(size);
    r = read_piece(from, src, buffer.data(), size);
    return r == CUDA_SUCCESS ? write_piece(to, dst, buffer.data(), size, true) : r;
  }
  // A reader thread fills a ring of buffers from the source while this
  // thread empties it into the destination.
  std::vector<std::vector<std::byte>> ring(kRing, std::vector<std::byte>(kStagePiece));
  std::mutex mu;
  std::condition_variable cv;
  uint64_t read = 0, written = 0;  // pieces done by each side
  CUresult read_error = CUDA_SUCCESS;
  bool stop = false;
  std::thread reader([&] {
    for (uint64_t i = 0; i < pieces; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || i - written < kRing; });
        if (stop) return;
      }
      const CUresult e = read_piece(from, src + i * kStagePiece, ring[i % kRing].data(), piece_size(i));
      std::lock_guard<std::mutex> lock(mu);
      if (e != CUDA_SUCCESS) {
        read_error = e;
        stop = true;
        cv.notify_all();
        return;
      }
      ++read;
      cv.notify_all();
    }
  });
  for (uint64_t i = 0; i < pieces && r == CUDA_SUCCESS; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || read > i; });
      if (read <= i) {
        r = read_error;
        break;
      }
    }
    r = write_piece(to, dst + i * kStagePiece, ring[i % kRing].data(), piece_size(i), i + 1 == pieces);
    std::lock_guard<std::mutex> lock(mu);
    ++written;
    cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  }
  reader.join();
  return r;
}

}  // namespace rgpu::shim

using rgpu::shim::Route;
using rgpu::shim::Shim;

namespace {

// The route of a context the program passed: its server, and itself.
bool context_route(Shim* shim, CUcontext ctx, Route* out) {
  const uint64_t h = rgpu::shim::handle_of(ctx);
  if (h == 0 || !shim->context_info(h, nullptr)) return false;
  *out = shim->route_handle(h, h);
  return true;
}

CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n, CUstream stream,
                   bool async, bool per_thread) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  Route to, from;
  if (!context_route(shim, dst_ctx, &to) || !context_route(shim, src_ctx, &from)) return CUDA_ERROR_INVALID_CONTEXT;
  STREAM_OR_RETURN(shim, stream, per_thread, s);
  if (n == 0) return CUDA_SUCCESS;
  rgpu::shim::ContextInfo dst_info, src_info;
  shim->context_info(to.ctx, &dst_info);
  shim->context_info(from.ctx, &src_info);
  (void)ctx;
  // One device: its own device-to-device copy. Two devices, on one server
  // or two: a server copies only within a device, so the bytes are staged.
  if (dst_info.device == src_info.device) {
    return async ? cuMemcpyDtoDAsync_v2(dst, src, n, stream) : cuMemcpyDtoD_v2(dst, src, n);
  }
  return rgpu::shim::copy_between_servers(*shim, to, dst, from, src, n, s, async);
  API_END
}

}  // namespace

// Peer access: no device of rgpu reads another's memory directly, on the
// same server or across servers; copies between devices work (below).
RGPU_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int* can_access, CUdevice dev, CUdevice peer) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!can_access) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->device(dev) || !shim->device(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can_access = 0;
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  (void)ctx;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->context_info(rgpu::shim::handle_of(peer), nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  (void)ctx;
  if (!shim->context_info(rgpu::shim::handle_of(peer), nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                          size_t n) {
  return copy_peer(dst, dst_ctx, src, src_ctx, n, nullptr, false, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                               CUcontext src_ctx, size_t n) {
  return copy_peer(dst, dst_ctx, src, src_ctx, n, nullptr, false, true);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                               CUcontext src_ctx, size_t n, CUstream s) {
  return copy_peer(dst, dst_ctx, src, src_ctx, n, s, true, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                                    CUcontext src_ctx, size_t n, CUstream s) {
  return copy_peer(dst, dst_ctx, src, src_ctx, n, s, true, true);
}
