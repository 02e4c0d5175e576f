// What the hand-written cuDNN rows share (cudnn_rows.cpp, cudnn_rnn_rows.cpp):
// refusals, the table and the call's handle, the legacy tensor descriptors
// of one call, and the checks of a device operand.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "call_env.h"
#include "dispatch.h"
#include "library_tables.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::server::cudnn_rows {

// CUDNN_STATUS_BAD_PARAM with "fn: what".
InvokeOutcome bad(const char* fn, const std::string& what);
// The library's status; its message when it is not success.
InvokeOutcome status(uint32_t code, const char* fn, const std::string& what);

// The table and the call's handle, or a refusal.
struct Start {
  const CudnnTable* table = nullptr;
  cudnnHandle_t handle = nullptr;
  InvokeOutcome refusal;
  bool ok() const { return table != nullptr; }
};
Start start(CallEnv& env, uint64_t handle, const char* fn);

// The legacy tensor descriptors of one call, made through the table and
// destroyed with it. Lifetime: one row's call; not thread-safe.
class LegacyDescs {
 public:
  explicit LegacyDescs(const CudnnTable& t) : t_(t) {}
  ~LegacyDescs();
  LegacyDescs(const LegacyDescs&) = delete;
  LegacyDescs& operator=(const LegacyDescs&) = delete;
  cudnnStatus_t make(const protocol::cudnn::LegacyTensor& in, cudnnTensorDescriptor_t* out);

 private:
  const CudnnTable& t_;
  std::vector<cudnnTensorDescriptor_t> made_;
};

// An enum no larger than `max`; fails `r` otherwise.
bool read_enum(protocol::ArgReader& r, uint32_t max, uint32_t* out);

inline void* dev(uint64_t p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// Whether `ptr` holds the tensor `d` describes in the calling context's
// memory; a null pointer passes when `optional`.
bool in_memory(const CallEnv& env, const protocol::cudnn::LegacyTensor& d, uint64_t ptr, bool optional);

}  // namespace rgpu::server::cudnn_rows
