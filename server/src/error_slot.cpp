// The async-error slot and the reasons that travel with errors.
#include "error_slot.h"

#include <utility>

#include "rgpu/common/reason.h"

namespace rgpu::server {
namespace {

struct Noted {
  uint32_t code = CUDA_SUCCESS;
  std::string text;
};

Noted& noted() {
  thread_local Noted n;
  return n;
}

}  // namespace

void note_reason(uint32_t code, std::string text) {
  Noted& n = noted();
  n.code = code;
  n.text = std::move(text);
}

void clear_reason() {
  Noted& n = noted();
  if (n.code == CUDA_SUCCESS) return;
  n.code = CUDA_SUCCESS;
  n.text.clear();
}

std::string ErrorSlot::reason(uint32_t code, std::string_view call) {
  std::string detail;
  Noted& n = noted();
  if (code != CUDA_SUCCESS && n.code == code) detail = std::move(n.text);
  clear_reason();
  if (take_device_reason_ != nullptr) {
    char text[kMaxReasonBytes + 1];
    size_t length = 0;
    // Always taken, so that a device's note never outlives its call.
    if (take_device_reason_(static_cast<CUresult>(code), text, sizeof text, &length) == CUDA_SUCCESS &&
        detail.empty() && code != CUDA_SUCCESS) {
      detail.assign(text, length);
    }
  }
  if (detail.empty() && code != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fault_code_ == code) {
      detail = std::move(fault_reason_);
      fault_code_ = CUDA_SUCCESS;
      fault_reason_.clear();
    }
  }
  if (detail.empty()) return {};
  // A detail that names its call already ("cudnnCreate: not on this server") keeps its own.
  const bool named = call.empty() || (detail.size() > call.size() && detail.compare(0, call.size(), call) == 0 &&
                                      detail[call.size()] == ':');
  return bounded_reason(named ? detail : std::string(call) + ": " + detail);
}

void ErrorSlot::fault(uint32_t code, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  fault_code_ = code;
  fault_reason_ = bounded_reason(text);
}

void ErrorSlot::device_fault(void* slot, CUresult code, const char* text, size_t size) {
  if (slot == nullptr || text == nullptr) return;
  static_cast<ErrorSlot*>(slot)->fault(static_cast<uint32_t>(code), std::string(text, size));
}

void ErrorSlot::record(uint64_t call_id, uint32_t code, wire::Api api, std::string_view call) {
  if (code == 0) return;  // success in every API
  std::string why = reason(code, call);
  std::lock_guard<std::mutex> lock(mu_);
  if (error_ != 0) return;
  error_ = code;
  error_api_ = api;
  error_call_ = call_id;
  error_reason_ = std::move(why);
}

void ErrorSlot::take(wire::Reply::Builder reply) {
  std::lock_guard<std::mutex> lock(mu_);
  reply.setAsyncError(error_);
  reply.setAsyncErrorApi(error_api_);
  reply.setAsyncErrorCall(error_call_);
  if (!error_reason_.empty()) reply.setAsyncErrorReason(error_reason_);
  error_ = 0;
  error_api_ = wire::Api::DRIVER;
  error_call_ = 0;
  error_reason_.clear();
}

}  // namespace rgpu::server
