// Checked copies and memsets executed on stream workers.
#include "copy.h"

#include <cstring>

namespace rgpu::cpudev {

namespace {

// Synchronous operations up to this many bytes run on the calling thread
// when their stream is idle (see Context::run_now_if_idle).
constexpr size_t kRunNowBytes = 64 * 1024;

// Runs an operation on `stream`: asynchronously, or waiting for it and
// returning its own result.
// A synchronous one is refused while capture rules forbid waiting (graph.h).
CUresult submit(Driver* d, const std::shared_ptr<Context>& ctx, const std::shared_ptr<Stream>& stream,
                std::function<CUresult()> op, bool sync, size_t size, CUgraphNodeType type) {
  if (!sync) {
    return ctx->enqueue(stream, {}, std::move(op), OpKind::kDevice, type) ? CUDA_SUCCESS : capture_refusal();
  }
  RGPU_CU_TRY(capture_check_unsafe(d->graphs()));
  RGPU_CU_TRY(ctx->check_wait(stream));
  CUresult now = CUDA_SUCCESS;
  if (size <= kRunNowBytes && ctx->run_now_if_idle(stream, op, &now)) return now;
  auto result = std::make_shared<CUresult>(CUDA_SUCCESS);
  uint64_t seq = ctx->enqueue(stream, {}, [op = std::move(op), result] {
    *result = op();
    return CUDA_SUCCESS;  // reported to the caller, not as an asynchronous error
  });
  if (!seq) return capture_refusal();
  stream->wait(seq);
  return *result;
}

bool still_valid(const Side& s, uint64_t size) { return !s.memory || s.memory->check(s.addr, size, s.group); }

}  // namespace

CUresult device_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out) {
  Device* dev = d->device_of(addr);
  if (!dev || !dev->memory->check(addr, size, group)) return CUDA_ERROR_INVALID_VALUE;
  *out = Side{addr, dev->memory.get(), group};
  return CUDA_SUCCESS;
}

CUresult host_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out) {
  if (!addr && size) return CUDA_ERROR_INVALID_VALUE;
  if (group != kAnyGroup && size && d->device_of(addr)) return device_side(d, addr, size, group, out);
  *out = Side{addr, nullptr};
  return CUDA_SUCCESS;
}

CUresult any_side(Driver* d, uint64_t addr, uint64_t size, uint64_t group, Side* out) {
  if (d->device_of(addr)) return device_side(d, addr, size, group, out);
  if (addr == 0) return CUDA_ERROR_INVALID_VALUE;
  *out = Side{addr, nullptr};
  return CUDA_SUCCESS;
}

CUresult enqueue_copy(Driver* d, const std::shared_ptr<Context>& current, CUstream h, Side dst, Side src,
                      size_t size, bool sync) {
  std::shared_ptr<Context> ctx;
  std::shared_ptr<Stream> stream;
  RGPU_CU_TRY(resolve_stream(d, current, h, &ctx, &stream));
  if (size == 0) return CUDA_SUCCESS;
  // Counted on the device written, else the one read (devices live as long as d).
  Device* dev = d->device_of(dst.memory ? dst.addr : src.addr);
  ActivityClock* busy = dev ? &dev->copies : nullptr;
  return submit(d, ctx, stream, [dst, src, size, busy]() -> CUresult {
    ActivityClock::Span copying(busy);
    // Pinned, a range that is still live now stays mapped until we finish.
    DeviceMemory::Pin p1 = dst.memory ? dst.memory->pin() : DeviceMemory::Pin();
    DeviceMemory::Pin p2 = src.memory ? src.memory->pin() : DeviceMemory::Pin();
    if (!still_valid(dst, size) || !still_valid(src, size)) return CUDA_ERROR_INVALID_VALUE;
    std::memmove(reinterpret_cast<void*>(dst.addr), reinterpret_cast<const void*>(src.addr), size);
    return CUDA_SUCCESS;
  }, sync, size, CU_GRAPH_NODE_TYPE_MEMCPY);
}

CUresult enqueue_memset(Driver* d, const std::shared_ptr<Context>& current, CUstream h, uint64_t dst,
                        uint32_t value, size_t elem, size_t count, bool sync) {
  if (dst % elem != 0) return CUDA_ERROR_INVALID_VALUE;
  if (count > SIZE_MAX / elem) return CUDA_ERROR_INVALID_VALUE;
  size_t size = count * elem;
  Side side;
  if (size) RGPU_CU_TRY(device_side(d, dst, size, current->copy_group(), &side));
  std::shared_ptr<Context> ctx;
  std::shared_ptr<Stream> stream;
  RGPU_CU_TRY(resolve_stream(d, current, h, &ctx, &stream));
  if (size == 0) return CUDA_SUCCESS;
  Device* dev = d->device_of(side.addr);
  ActivityClock* busy = dev ? &dev->copies : nullptr;
  return submit(d, ctx, stream, [side, value, elem, count, size, busy]() -> CUresult {
    ActivityClock::Span writing(busy);
    DeviceMemory::Pin pin = side.memory->pin();
    if (!still_valid(side, size)) return CUDA_ERROR_INVALID_VALUE;
    if (elem == 1) {
      std::memset(reinterpret_cast<void*>(side.addr), static_cast<int>(value & 0xff), count);
    } else if (elem == 2) {
      auto* p = reinterpret_cast<uint16_t*>(side.addr);
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<uint16_t>(value);
    } else {
      auto* p = reinterpret_cast<uint32_t*>(side.addr);
      for (size_t i = 0; i < count; ++i) p[i] = value;
    }
    return CUDA_SUCCESS;
  }, sync, size, CU_GRAPH_NODE_TYPE_MEMSET);
}

}  // namespace rgpu::cpudev
