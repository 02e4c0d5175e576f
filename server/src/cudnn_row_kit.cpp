// Helpers of the hand-written cuDNN rows (cudnn_row_kit.h).
#include "cudnn_row_kit.h"

namespace rgpu::server::cudnn_rows {

namespace cw = ::rgpu::protocol::cudnn;
using ::rgpu::protocol::HandleKind;
constexpr auto kApi = wire::Api::CUDNN;

InvokeOutcome bad(const char* fn, const std::string& what) {
  return dispatch::refuse(kApi, CUDNN_STATUS_BAD_PARAM, std::string(fn) + ": " + what);
}

InvokeOutcome status(uint32_t code, const char* fn, const std::string& what) {
  InvokeOutcome o;
  o.api = kApi;
  o.code = code;
  if (code != 0) o.message = std::string(fn) + ": " + what;
  return o;
}

Start start(CallEnv& env, uint64_t handle, const char* fn) {
  Start s;
  void* h = env.find(static_cast<HandleKind>(cw::kHandleKind), handle);
  if (!h) {
    s.refusal = bad(fn, "handle is not a live cudnn handle");
    return s;
  }
  s.table = library_table<CudnnTable>(env);
  if (!s.table) {
    s.refusal = dispatch::refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: not on this server");
    return s;
  }
  s.handle = static_cast<cudnnHandle_t>(h);
  return s;
}

LegacyDescs::~LegacyDescs() {
  for (cudnnTensorDescriptor_t d : made_) t_.cudnnDestroyTensorDescriptor(d);
}

cudnnStatus_t LegacyDescs::make(const cw::LegacyTensor& in, cudnnTensorDescriptor_t* out) {
  if (!t_.cudnnCreateTensorDescriptor || !t_.cudnnDestroyTensorDescriptor || !t_.cudnnSetTensorNdDescriptor) {
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  cudnnStatus_t s = t_.cudnnCreateTensorDescriptor(out);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  made_.push_back(*out);
  return t_.cudnnSetTensorNdDescriptor(*out, static_cast<cudnnDataType_t>(in.dtype), in.nd, in.dims, in.strides);
}

bool read_enum(protocol::ArgReader& r, uint32_t max, uint32_t* out) {
  if (!r.scalar(out)) return false;
  return *out <= max || r.reject();
}

bool in_memory(const CallEnv& env, const cw::LegacyTensor& d, uint64_t ptr, bool optional) {
  if (ptr == 0) return optional;
  const uint64_t bytes = cw::legacy_bytes(d);
  return bytes != kNoExtent && env.device_range(ptr, bytes);
}

}  // namespace rgpu::server::cudnn_rows
