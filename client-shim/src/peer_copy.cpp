// Peer access and copies between devices: rgpu gives no device access to
// another's memory (cuDeviceCanAccessPeer is 0), and copies between two
// devices (of two servers, or of one) are staged through the client in
// pipelined pieces. Also the unified cuMemcpy, whose direction comes from
// the pointers.
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

// The transfer unit of a session's own pipelined copies: the server's
// advice, or a default where it advises none.
uint64_t chunk_of(const Client& c) {
  const uint64_t chunk = c.options().pipeline_chunk;
  return chunk != 0 ? chunk : uint64_t{4} << 20;
}

// Reads a piece from the source's legacy stream: in chunks that are all in
// flight at once when it is large (the session's pipelined copy).
CUresult read_piece(const Route& from, uint64_t src, std::byte* out, uint64_t n) {
  const uint64_t chunk = chunk_of(*from.client);
  if (n >= 2 * chunk) return from.client->copy_out_pipelined(from.ctx, out, src, n, protocol::kNullStream, chunk).result;
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

// Writes a piece on the destination's legacy stream, in chunks that are all
// in flight at once when it is large; returns when the piece has landed,
// and with the error of any chunk.
CUresult write_piece(const Route& to, uint64_t dst, const std::byte* in, uint64_t n) {
  const uint64_t chunk = chunk_of(*to.client);
  if (n >= 2 * chunk) return to.client->copy_in_pipelined(to.ctx, dst, in, n, protocol::kNullStream, chunk).result;
  auto fill = [&](wire::Call::Builder c) {
    auto h = c.initMemcpyHtoD();
    h.setDst(dst);
    h.setSize(n);
    h.setStream(protocol::kNullStream);
    if (n <= Client::kInlineLimit) h.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(in), n));
  };
  transport::Bytes payload;
  if (n > Client::kInlineLimit) payload = transport::Bytes(in, n);
  return to.client->call_sync(to.ctx, fill, payload).result;
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

  constexpr size_t kRing = 2;
  const uint64_t pieces = (size + kStagePiece - 1) / kStagePiece;
  auto piece_size = [&](uint64_t i) { return i + 1 == pieces ? size - i * kStagePiece : kStagePiece; };
  if (pieces == 1) {
    std::vector<std::byte> buffer = shim.take_stage_buffer(size);
    r = read_piece(from, src, buffer.data(), size);
    if (r == CUDA_SUCCESS) r = write_piece(to, dst, buffer.data(), size);
    shim.give_stage_buffer(std::move(buffer));
    return r;
  }
  // A reader thread fills a ring of buffers from the source while this
  // thread empties it into the destination.
  std::vector<std::vector<std::byte>> ring;
  for (size_t i = 0; i < kRing; ++i) ring.push_back(shim.take_stage_buffer(kStagePiece));
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
    r = write_piece(to, dst + i * kStagePiece, ring[i % kRing].data(), piece_size(i));
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
  for (auto& b : ring) shim.give_stage_buffer(std::move(b));
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
                   bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  Route to, from;
  if (!context_route(shim, dst_ctx, &to) || !context_route(shim, src_ctx, &from)) return CUDA_ERROR_INVALID_CONTEXT;
  STREAM_OR_RETURN(shim, stream, s);
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
  return copy_peer(dst, dst_ctx, src, src_ctx, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                               CUcontext src_ctx, size_t n, CUstream s) {
  return copy_peer(dst, dst_ctx, src, src_ctx, n, s, true);
}

// ---- unified copies: the direction from the pointers -----------------------------

namespace {

// Whether `p` is device memory: an allocation the router tracks, else the
// answer of the server of the current context (one round trip).
bool is_device_pointer(Shim* shim, CUdeviceptr p) {
  if (shim->tracked(p)) return true;
  CUdeviceptr base = 0;
  size_t size = 0;
  return cuMemGetAddressRange_v2(&base, &size, p) == CUDA_SUCCESS;
}

CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool async) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (n == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  const bool d = is_device_pointer(shim, dst), s = is_device_pointer(shim, src);
  void* host_dst = reinterpret_cast<void*>(dst);
  const void* host_src = reinterpret_cast<const void*>(src);
  if (d && s) return async ? cuMemcpyDtoDAsync_v2(dst, src, n, stream) : cuMemcpyDtoD_v2(dst, src, n);
  if (d) return async ? cuMemcpyHtoDAsync_v2(dst, host_src, n, stream) : cuMemcpyHtoD_v2(dst, host_src, n);
  if (s) return async ? cuMemcpyDtoHAsync_v2(host_dst, src, n, stream) : cuMemcpyDtoH_v2(host_dst, src, n);
  // Host to host, in stream order.
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return r;
  std::memmove(host_dst, host_src, n);
  return CUDA_SUCCESS;
  API_END
}

}  // namespace

RGPU_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copy_unified(dst, src, n, nullptr, false);
}
RGPU_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy_unified(dst, src, n, s, true);
}
