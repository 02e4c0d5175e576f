// Where the bytes of a copy are: a host-to-device copy's come inline or as
// the message's bulk payload; a device-to-host result rides in the reply up
// to kReplyBytesLimit. Private to the session's calls
// (session_calls.cpp, session_work.cpp).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rgpu/protocol/codec.h"
#include "rgpu/transport/transport.h"
#include "staging_pool.h"

namespace rgpu::server {

// Device-to-host results up to this size ride inside the reply; larger
// ones go as a bulk payload.
inline constexpr uint64_t kReplyBytesLimit = 32 * 1024;

// Where the bytes of a host-to-device copy are: inline, or the message payload.
struct SourceBytes {
  const std::byte* data = nullptr;
  StagingPool::Buffer owned;
};

// `staging(size)` gives a staging buffer (Session::staging).
template <class Staging>
inline CUresult source_bytes(wire::Call::CopyIn::Reader in, uint64_t payload_bytes, transport::Message& message,
                      bool is_last, bool need_copy, Staging&& staging, SourceBytes* out) {
  uint64_t size = in.getSize();
  auto inline_bytes = in.getBytes();
  if (payload_bytes == 0) {
    if (inline_bytes.size() != size) return CUDA_ERROR_INVALID_VALUE;
    if (need_copy) {
      out->owned = staging(size);
      if (!out->owned) return CUDA_ERROR_OUT_OF_MEMORY;
      std::memcpy(out->owned.get(), inline_bytes.begin(), size);
      out->data = out->owned.get();
    } else {
      out->data = reinterpret_cast<const std::byte*>(inline_bytes.begin());
    }
    return CUDA_SUCCESS;
  }
  // The payload belongs to the last call of its message, and only once.
  if (!is_last || !message.payload || payload_bytes != size || message.payload->size() != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out->owned = staging(size);
  if (!out->owned) return CUDA_ERROR_OUT_OF_MEMORY;
  Status s = message.payload->receive(out->owned.get());
  message.payload.reset();
  if (!s.is_ok()) return CUDA_ERROR_UNKNOWN;
  out->data = out->owned.get();
  return CUDA_SUCCESS;
}


}  // namespace rgpu::server
