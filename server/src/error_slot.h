// A session's errors on their way to the client: the first error of an
// async call since the last reply, and the reason that goes with an error
// when the server or its device knows it (docs/protocol.md, "Reasons").
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "rgpu.capnp.h"

namespace rgpu::server {

// Notes why the call the calling thread runs fails with `code` (a quota, a
// limit), where that is decided; ErrorSlot::reason() of that call takes it.
// Thread-local, so a reason never reaches another thread's call, and
// clear_reason() at the start of every call keeps one from reaching the next.
void note_reason(uint32_t code, std::string text);
void clear_reason();

// Thread-safe: fault() from the device's threads, everything else from the
// threads that run the session's calls and answer the client.
class ErrorSlot {
 public:
  // The CPU device's rgpuTakeErrorReason, or null (NVIDIA's driver).
  using TakeDeviceReason = CUresult (*)(CUresult code, char* text, size_t size, size_t* length);
  explicit ErrorSlot(TakeDeviceReason take_device_reason) : take_device_reason_(take_device_reason) {}

  // Why the call the calling thread just ran failed with `code`: what the
  // server noted, else what the device noted on this thread, else the last
  // kernel fault of that code; "call: detail" when `call` is named, bounded
  // (rgpu/common/reason.h); empty when nothing is known. Clears the calling
  // thread's notes, and the fault it returns.
  std::string reason(uint32_t code, std::string_view call);
  // A kernel's fault, for the reply or async error that reports its code.
  void fault(uint32_t code, std::string text);
  // The CPU device's reason callback (rgpuCtxSetErrorReasonCallback); `slot`
  // is the ErrorSlot.
  static void device_fault(void* slot, CUresult code, const char* text, size_t size);

  // Keeps the first error of an async call since the last take(), with its
  // reason (the calling thread's, named after `call`).
  void record(uint64_t call_id, uint32_t code, wire::Api api, std::string_view call);
  // Moves the kept error into `reply` and empties the slot.
  void take(wire::Reply::Builder reply);

 private:
  const TakeDeviceReason take_device_reason_;
  std::mutex mu_;
  uint32_t error_ = CUDA_SUCCESS;
  wire::Api error_api_ = wire::Api::DRIVER;
  uint64_t error_call_ = 0;
  std::string error_reason_;
  uint32_t fault_code_ = CUDA_SUCCESS;
  std::string fault_reason_;
};

}  // namespace rgpu::server
