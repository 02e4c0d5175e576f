// Shared helpers of the exported entry points: the exception barrier, state
// access and argument mapping. Private to the library.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>

#include <vector>

#include "shim.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

// No exception ever crosses the C boundary.
#define API_BEGIN try {
#define API_END                \
  }                            \
  catch (...) {                \
    return CUDA_ERROR_UNKNOWN; \
  }

#define SHIM_OR_RETURN(var)                            \
  CUresult shim_error_ = CUDA_SUCCESS;                 \
  ::rgpu::shim::Shim* var = ::rgpu::shim::shim_or_error(&shim_error_); \
  if (!var) return shim_error_;

#define CONTEXT_OR_RETURN(shim, var)                        \
  uint64_t var = ::rgpu::shim::current_context();           \
  if (var == 0 || !(shim)->context_info(var, nullptr)) return CUDA_ERROR_INVALID_CONTEXT;

// Maps a stream argument to its wire handle `var`, or returns the error.
#define STREAM_OR_RETURN(shim, stream, var)                                                                   \
  uint64_t var = 0;                                                                                           \
  if (CUresult stream_error_ = ::rgpu::shim::stream_handle(shim, stream, &var); stream_error_ != CUDA_SUCCESS) \
    return stream_error_;

// Maps the program's device ordinal to the server's `var`, or returns
// CUDA_ERROR_INVALID_DEVICE.
#define DEVICE_OR_RETURN(shim, dev, var)                       \
  if (!(shim)->device(dev)) return CUDA_ERROR_INVALID_DEVICE;  \
  const CUdevice var = (shim)->server_ordinal(dev);

namespace rgpu::shim {

inline uint64_t handle_of(const void* h) { return reinterpret_cast<uint64_t>(h); }

// While one lives on a thread, that thread's NULL stream is the per-thread
// default stream: the _ptsz/_ptds entry points are their plain names run
// inside one (generated from api/driver.api, `per_thread` lines).
class PerThreadDefault {
 public:
  PerThreadDefault();
  ~PerThreadDefault();
  PerThreadDefault(const PerThreadDefault&) = delete;
  PerThreadDefault& operator=(const PerThreadDefault&) = delete;
};
// Whether the calling thread is inside a PerThreadDefault.
bool per_thread_default();

// Maps a stream argument to the wire handle: the program's NULL stream is
// kNullStream (kPerThreadStream inside a PerThreadDefault), CU_STREAM_LEGACY
// and CU_STREAM_PER_THREAD are kLegacyStream and kPerThreadStream; any other
// value must be a live stream this library minted.
CUresult stream_handle(Shim* shim, CUstream stream, uint64_t* out);

// Work with client-side effects on wire stream `stream`: recorded into its
// capture as a host step (*recorded) when it captures (graph_api.cpp,
// Client::capture_host_step); nothing is asked while this process captures
// nothing.
CUresult capture_host_step(Client& client, uint64_t ctx, uint64_t stream, protocol::HostStepKind kind, CUhostFn fn,
                           void* data, void* host, uint64_t device, size_t size, bool* recorded);

// Whether a wire stream handle is the legacy default stream (which waits for
// every other blocking stream): the NULL stream or CU_STREAM_LEGACY.
inline bool is_legacy_stream(uint64_t stream) {
  return stream == protocol::kNullStream || stream == protocol::kLegacyStream;
}

// Which async copies to the host a sync call on wire stream `stream` waits
// for: the stream's own, or every stream's for the legacy stream.
inline uint64_t copy_out_scope(uint64_t stream) {
  return is_legacy_stream(stream) ? Client::kAnyStream : stream;
}

// A library handle names its module, and a kernel its function, by the same
// serial: the program may pass either where the other belongs.
inline uint64_t module_handle(uint64_t h) {
  return protocol::kind_of(h) == HandleKind::kLibrary ? protocol::make_handle(HandleKind::kModule, protocol::serial_of(h)) : h;
}
inline uint64_t function_handle(uint64_t h) {
  return protocol::kind_of(h) == HandleKind::kKernel ? protocol::make_handle(HandleKind::kFunction, protocol::serial_of(h))
                                                     : h;
}

// A launch's parameters as the kernel `k` declares them, from either form a
// launch takes: `params` (one pointer per parameter) packed into `packed`,
// or the buffer `extra` names. *buffer and *size are what to send.
CUresult kernel_params(const fatbin::KernelInfo& k, void** params, void** extra, std::vector<unsigned char>* packed,
                       const void** buffer, size_t* size);
// A copy of function `f`'s launch parameters (for a graph's kernel node,
// which keeps them): the packed bytes and, for the `params` form, each
// parameter's offset in them by ordinal.
CUresult function_params(CUfunction f, void** params, void** extra, std::vector<unsigned char>* packed,
                         std::vector<size_t>* offsets);

}  // namespace rgpu::shim
